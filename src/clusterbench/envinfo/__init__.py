"""Know the machine: the inventory of a host (``inventory``), the kernel's files it reads
(``sysfs``), the vendor GPU libraries (``gpulib``) and drift between two inventories (``diff``)."""
