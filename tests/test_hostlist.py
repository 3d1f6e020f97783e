"""Tests of clusterbench.hostlist: slurm hostlists as users and Slurm write them."""

import tracemalloc

import pytest
from slurm_fixtures import LOOSE

from clusterbench.errors import UsageError
from clusterbench.hostlist import MAX_HOSTS, MAX_NUMBER, REFUSED_HERE, expand_hostlist
from clusterbench.ranks.env import expand_hostlist as expand_hostlist_rankenv


def test_expansion_without_slurm():
    # the same facts, so they hold where Slurm is not installed
    assert expand_hostlist("rack[1-2]-node[01-02]") == ["rack1-node01", "rack1-node02", "rack2-node01",
                                                        "rack2-node02"]
    assert expand_hostlist("gpu[08-11,20],login1") == ["gpu08", "gpu09", "gpu10", "gpu11", "gpu20", "login1"]
    assert expand_hostlist("x[1-010]")[-2:] == ["x9", "x10"]
    with pytest.raises(UsageError, match="'a-b' in \\[\\] is not a number"):
        expand_hostlist("gpu[a-b]")


@pytest.mark.parametrize("spec", ["x[1-3", "x]1[", "x[ 1-2]", "x[+1-2]", "x[1-]"])
def test_stricter_than_slurm_where_slurm_accepts_by_accident(spec):
    # scontrol turns these into odd names ("x]", "x]1]") or pads them ("x01"): refused here
    with pytest.raises(UsageError):
        expand_hostlist(spec)


def test_cap_is_checked_before_any_name_is_built():
    tracemalloc.start()
    try:
        with pytest.raises(UsageError, match=f"more than the {MAX_HOSTS:,}"):
            expand_hostlist("gpu[1-60000],rack[1-40000]-n[1-2]")
        with pytest.raises(UsageError, match="65,536"):
            expand_hostlist("gpu[1-99999999]")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # nothing near 100,000 strings was allocated
    assert len(expand_hostlist("gpu[1-50000],cpu[1-50000]")) == MAX_HOSTS


@pytest.mark.parametrize("spec", ["x[\u0661-\u0663]", "x[\uff11-\uff13]"])
def test_only_ascii_digits_are_numbers(spec):
    # Slurm refuses these; Python's int() and \d would take them and print x1 x2 x3
    with pytest.raises(UsageError, match="is not a number"):
        expand_hostlist(spec)


@pytest.mark.parametrize("spec", ["x\ny", "x[1-2]\ny", "y\nx[1-2]", "x\ry", "x\x00y", "x\x1by"])
def test_control_characters_are_refused_not_separators(spec):
    # Slurm keeps them inside names ('x\ny' is one name); clusterbench refuses, saying so
    with pytest.raises(UsageError, match=f"control character .*{REFUSED_HERE}"):
        expand_hostlist(spec)


@pytest.mark.parametrize("spec", ["x[ 1-2]", "x[1- 2]", "x[\t1]", "x[+1]", "x[1-+2]", "x[1-]", "x[1a-2]"])
def test_loose_ranges_slurm_takes_are_refused_with_the_reason(spec):
    with pytest.raises(UsageError, match=f"{LOOSE}, {REFUSED_HERE}"):
        expand_hostlist(spec)


@pytest.mark.parametrize("spec", ["x[1 ]", "x[ 5-3]", "x[-1]", "x[1--2]", "x[1x-2]", "x[a]", "x[]"])
def test_ranges_slurm_refuses_do_not_claim_it_accepts(spec):
    with pytest.raises(UsageError) as e:
        expand_hostlist(spec)
    assert LOOSE not in str(e.value) and REFUSED_HERE not in str(e.value)


@pytest.mark.parametrize("spec", ["x[", "x[1-2", "x]", "x]y", "x[[1]", "x[1]["])
def test_unbalanced_brackets_are_refused_with_the_reason(spec):
    with pytest.raises(UsageError, match=REFUSED_HERE):
        expand_hostlist(spec)


def test_numbers_past_slurms_unsigned_long_are_refused():
    assert expand_hostlist(f"x[{MAX_NUMBER - 1}-{MAX_NUMBER}]") == [f"x{MAX_NUMBER - 1}", f"x{MAX_NUMBER}"]
    for spec in (f"x[{MAX_NUMBER + 1}]", "x[99999999999999999999]", f"x[{MAX_NUMBER}-{MAX_NUMBER + 1}]"):
        with pytest.raises(UsageError, match=f"Slurm clamps or wraps it, {REFUSED_HERE}"):
            expand_hostlist(spec)


def test_blanks_and_tabs_separate_names():
    assert expand_hostlist(" a,b\tc[1-2] , ,d[3]\t") == ["a", "b", "c1", "c2", "d3"]


def test_cap_refusal_says_slurm_has_none():
    with pytest.raises(UsageError, match=f"more than the {MAX_HOSTS:,} .*{REFUSED_HERE}"):
        expand_hostlist(f"x[1-{MAX_HOSTS // 2 + 1}],y[1-{MAX_HOSTS // 2}]")


@pytest.mark.parametrize("spec,hosts", [
    ("n1", ["n1"]), ("n[1-3]", ["n1", "n2", "n3"]), ("gpu[07-09,12],login", ["gpu07", "gpu08", "gpu09", "gpu12", "login"]),
    ("a,b", ["a", "b"]), ("rack1-n[1-2]", ["rack1-n1", "rack1-n2"]),
])
def test_hostlist(spec, hosts):
    assert expand_hostlist_rankenv(spec) == hosts
