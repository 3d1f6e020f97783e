from clusterbench.cli import main

main()
