"""The keyword baseline that `triage eval` reports beside the KB's figures."""

from __future__ import annotations

from triage.kbtools.baseline import classify, classify_files


def test_the_category_with_the_most_matching_lines_wins():
    log = "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB\nHCCL timeout on rank 3\nOOM again\n"
    assert classify(log.splitlines()) == "npu_oom"


def test_a_tie_goes_to_the_earlier_category_and_no_keyword_means_none():
    assert classify(["Segmentation fault (core dumped)", "HCCL error 7"]) == "segfault"
    assert classify(["step 10 loss 1.23", "step 20 loss 1.01"]) is None


def test_logs_are_read_as_one_with_undecodable_bytes_replaced(tmp_path):
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_bytes(b"\xff\xfe garbage\n")
    second.write_bytes(b"ModuleNotFoundError: No module named 'torch_npu'\n")
    assert classify_files([first, second]) == "env_version"


def test_a_gzipped_log_is_read_as_the_scan_reads_it(tmp_path):
    import gzip

    log = tmp_path / "job.log.gz"
    log.write_bytes(gzip.compress(b"RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB\n"))
    assert classify_files([log]) == "npu_oom"
