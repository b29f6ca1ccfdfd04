"""The rule that moves a SASS instruction off a CUDA line that cannot have made it
(analysis/device/attribution.py), on listings in nvdisasm -gi's format: lines taken from the demo
GEMM's real listing (testing/integration/test_device_attribution.py checks real compiles end to end)."""

from lower_trace.analysis.device.attribution import reattribute
from lower_trace.analysis.device.sass import sass_lines

# The CUDA lines that matter, the rest blank: what each line's text calls decides.
CUDA = {
    64: "for (int k_1 = 0; k_1 < 32; ++k_1) {",
    74: "tl::warpgroup_arrive();",
    79: "tl::wgmma_ss<tl::DataType::kFloat16, tl::DataType::kFloat16, tl::DataType::kFloat32, 64, 128, 16, false, true, 1, 1>(desc_a, desc_b, C, 1);",
    86: "mbarrier[((k_1 % 3) + 3)].arrive();",
    88: "tl::warpgroup_arrive();",
    90: "tl::wgmma_rs<tl::DataType::kFloat16, tl::DataType::kFloat16, tl::DataType::kFloat32, 64, 64, 16, false, true, 1, 1>(A, desc_b, C, 1);",
    95: "scores_sum[i] = scores_sum[i] + acc_s[i];",
}
SOURCE = [CUDA.get(n, "") for n in range(1, 101)]
HEAD = '        .text.gemm_kernel:\n\t//## File "/tmp/x/gemm.cu", line 64\n        /*0970*/                   UIADD3 UR4, UR4, 0x1, URZ ;\n'


def moved(sass, source=SOURCE):
    lines = reattribute(sass_lines(sass, "gemm.cu"), source)
    return [(item.text.split("*/")[1].split()[0], item.line, item.nvcc_line) for item in lines if item.opcode]


def test_an_hgmma_on_a_barrier_line_goes_to_the_wgmma_after_its_warpgroup_arrive():
    sass = HEAD + (
        '\t//## File "/tmp/x/gemm.cu", line 74\n'
        "        /*0980*/                   WARPGROUP.ARRIVE ;\n"
        '\t//## File "/tmp/x/gemm.cu", line 79\n'
        "        /*0a80*/                   HGMMA.64x128x16.F32 R24, gdesc[UR8].tnspB, R24 ;\n"
        '\t//## File "../src/tl_templates/cuda/barrier.h", line 250 inlined at "/tmp/x/gemm.cu", line 86\n'
        '\t//## File "/tmp/x/gemm.cu", line 86\n'
        "        /*0ae0*/                   UIADD3 UR7, UR4, 0x1, URZ ;\n"
        "        /*0b00*/                   HGMMA.64x128x16.F32 R88, gdesc[UR8].tnspB, R88 ;\n"
        "        /*0ca0*/                   SYNCS.ARRIVE.TRANS64.A1T0 RZ, [R7+URZ+0x18], RZ ;\n"
    )
    assert moved(sass) == [
        ("UIADD3", 64, 0), ("WARPGROUP.ARRIVE", 74, 0), ("HGMMA.64x128x16.F32", 79, 0),
        ("UIADD3", 86, 0), ("HGMMA.64x128x16.F32", 79, 86), ("SYNCS.ARRIVE.TRANS64.A1T0", 86, 0),
    ]  # fmt: skip
    hgmma = [item for item in reattribute(sass_lines(sass, "gemm.cu"), SOURCE) if item.nvcc_line]
    assert hgmma[0].location == ""  # barrier.h:250 was where nvcc's line came from, not the wgmma's


def test_the_fence_picks_the_batch_not_the_closest_wgmma_instruction():
    # Instructions of the first wgmma line come just before; the HGMMA follows the second batch's arrive.
    sass = HEAD + (
        '\t//## File "/tmp/x/gemm.cu", line 79\n'
        "        /*0a80*/                   HGMMA.64x128x16.F32 R24, gdesc[UR8].tnspB, R24 ;\n"
        '\t//## File "/tmp/x/gemm.cu", line 88\n'
        "        /*0a90*/                   WARPGROUP.ARRIVE ;\n"
        '\t//## File "/tmp/x/gemm.cu", line 95\n'
        "        /*0aa0*/                   HGMMA.64x64x16.F32 R56, R36, gdesc[UR8].tnspB, R56 ;\n"
    )
    assert moved(sass)[-1] == ("HGMMA.64x64x16.F32", 90, 95)
    without_fence = sass.replace("WARPGROUP.ARRIVE", "NOP")  # no fence: the closest earlier wgmma line's instruction
    assert moved(without_fence)[-1] == ("HGMMA.64x64x16.F32", 79, 95)


def test_nothing_that_can_have_made_it_in_the_function_keeps_nvccs_line():
    sass = (
        HEAD + '\t//## File "/tmp/x/gemm.cu", line 86\n        /*0b00*/                   UTMALDG.2D [UR4], [UR10], desc[UR18] ;\n'
        '        .text.other_kernel:\n\t//## File "/tmp/x/gemm.cu", line 86\n'
        "        /*0000*/                   HGMMA.64x128x16.F32 R88, gdesc[UR8].tnspB, R88 ;\n"
    )
    # No tma_load line anywhere; the wgmma line 79 is named only in gemm_kernel, not in other_kernel.
    lines = sass_lines(sass.replace("line 64", "line 79"), "gemm.cu")
    assert [(item.line, item.nvcc_line) for item in reattribute(lines, SOURCE) if item.opcode] == [(79, 0), (86, 0), (86, 0)]
