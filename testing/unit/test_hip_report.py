"""HIP's resource remarks read into the device stage's shapes. The text is in the format LLVM's
AMDGPU backend prints for -Rpass-analysis=kernel-resource-usage (its own regression tests hold
the same lines); no hipcc runs here, so this is the part of the HIP device stage tested here."""

from lower_trace.analysis.device.hip_report import parse_hip_report

REMARKS = """\
kernel.cpp:3:1: warning: something else the compiler said
remark: kernel.cpp:12:0: Function Name: main_kernel [-Rpass-analysis=kernel-resource-usage]
remark: kernel.cpp:12:0:     TotalSGPRs: 28 [-Rpass-analysis=kernel-resource-usage]
remark: kernel.cpp:12:0:     VGPRs: 9 [-Rpass-analysis=kernel-resource-usage]
remark: kernel.cpp:12:0:     AGPRs: 43 [-Rpass-analysis=kernel-resource-usage]
remark: kernel.cpp:12:0:     ScratchSize [bytes/lane]: 16 [-Rpass-analysis=kernel-resource-usage]
remark: kernel.cpp:12:0:     Dynamic Stack: False [-Rpass-analysis=kernel-resource-usage]
remark: kernel.cpp:12:0:     Occupancy [waves/SIMD]: 5 [-Rpass-analysis=kernel-resource-usage]
remark: kernel.cpp:12:0:     SGPRs Spill: 0 [-Rpass-analysis=kernel-resource-usage]
remark: kernel.cpp:12:0:     VGPRs Spill: 2 [-Rpass-analysis=kernel-resource-usage]
remark: kernel.cpp:12:0:     LDS Size [bytes/block]: 32768 [-Rpass-analysis=kernel-resource-usage]
remark: other.cpp:40:0: Function Name: second
remark: other.cpp:40:0:     SGPRs: 13
remark: other.cpp:40:0:     VGPRs: 10
"""


def test_every_kernel_and_number_the_remarks_give():
    first, second = parse_hip_report(REMARKS)
    assert (first.function, first.registers, first.stack, first.shared_static) == ("main_kernel", 9, 16, 32768)
    assert dict(first.extra) == {"sgpr": 28, "vgpr": 9, "agpr": 43, "scratch": 16, "waves_per_simd": 5, "sgpr_spill": 0, "vgpr_spill": 2, "lds": 32768}
    assert first.spill_stores == 0  # AMD counts spilled registers, not bytes: kept in extra only
    assert (second.function, second.registers, dict(second.extra)) == ("second", 10, {"sgpr": 13, "vgpr": 10})


def test_no_remarks_no_kernels():
    assert parse_hip_report("hipcc: error: no input files\n") == ()
