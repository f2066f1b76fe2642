"""A bag whose recording stopped without closing it: refused with the fix, then recovered."""

from __future__ import annotations

import numpy as np
import pytest
from identify_cases import mx64_session

from bam_identify.cli import recover_main
from bam_identify.data.bag_reader import read_bag
from bam_identify.data.bag_recovery import needs_recovery, recover_bag
from bam_identify.data.bag_writer import write_bag
from bam_sim.common.errors import BamError


def crashed(tmp_path, cut: int):
    """A complete two-trial bag, then the same with its end cut off and no metadata."""
    session = mx64_session(duration=0.5)
    complete = write_bag(tmp_path / "complete", [session])
    broken = write_bag(tmp_path / "broken", [session])
    (broken / "metadata.yaml").unlink()
    mcap = next(broken.glob("*.mcap"))
    data = mcap.read_bytes()
    mcap.write_bytes(data[: len(data) - cut])
    return complete, broken


def test_the_reader_names_the_fix(tmp_path):
    _, broken = crashed(tmp_path, cut=200)
    assert needs_recovery(broken)
    with pytest.raises(BamError, match=r"was not closed .* recover .*broken"):
        read_bag(broken)


def test_recovery_keeps_every_complete_record(tmp_path):
    """Cutting only the summary and footer (what a crash after the last chunk leaves)
    loses no message: the recovered bag reads as the complete one."""
    complete, broken = crashed(tmp_path, cut=0)
    mcap = next(broken.glob("*.mcap"))
    data = mcap.read_bytes()
    mcap.write_bytes(data[: data.rfind(b"\x0f")])  # up to the data-end record
    recovery = recover_bag(broken)
    assert recovery.output == tmp_path / "broken_recovered"
    assert not needs_recovery(recovery.output) and not (broken / "metadata.yaml").exists()
    got, want = read_bag(recovery.output), read_bag(complete)
    assert len(got) == len(want) == 2
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a.position, b.position)
        np.testing.assert_array_equal(a.goal, b.goal)


def test_a_record_cut_mid_way_is_dropped_and_said(tmp_path, capsys):
    _, broken = crashed(tmp_path, cut=5000)
    code = recover_main([str(broken), "--output", str(tmp_path / "saved")])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "recovered" in out.out and "incomplete record" in out.out
    assert (tmp_path / "saved" / "metadata.yaml").is_file()
    again = recover_main([str(broken), "--output", str(tmp_path / "saved")])
    assert again == 2 and "already exists" in capsys.readouterr().err


def test_a_complete_bag_needs_no_recovery(tmp_path, capsys):
    complete, _ = crashed(tmp_path, cut=10)
    assert recover_main([str(complete)]) == 2
    assert "nothing to recover" in capsys.readouterr().err
