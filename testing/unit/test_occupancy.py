"""analysis/device/occupancy.py against CUDA's own calculator.

The ground truth is cuda_occupancy.h itself: a small C++ program includes it, fills its device
descriptor from the Programming Guide's published numbers (written out again here, not read from
the module under test) and answers a grid of launches. No GPU and no nvcc: g++ and the header.
"""

import os
import shutil
import subprocess

import pytest

from lower_trace.analysis.device.occupancy import arch_limits, occupancy

HEADER = "/usr/local/cuda/include/cuda_occupancy.h"
KB = 1024

# CUDA C++ Programming Guide, "Technical Specifications per Compute Capability":
# (major, minor): threads/SM, shared bytes/SM (largest carveout), opt-in shared bytes/block, reserved bytes/block.
PUBLISHED = {
    "sm_70": (7, 0, 2048, 96 * KB, 96 * KB, 0),
    "sm_75": (7, 5, 1024, 64 * KB, 64 * KB, 0),
    "sm_80": (8, 0, 2048, 164 * KB, 163 * KB, KB),
    "sm_86": (8, 6, 1536, 100 * KB, 99 * KB, KB),
    "sm_87": (8, 7, 1536, 164 * KB, 163 * KB, KB),
    "sm_89": (8, 9, 1536, 100 * KB, 99 * KB, KB),
    "sm_90": (9, 0, 2048, 228 * KB, 227 * KB, KB),
    "sm_100": (10, 0, 2048, 228 * KB, 227 * KB, KB),
    "sm_103": (10, 3, 2048, 228 * KB, 227 * KB, KB),
    "sm_120": (12, 0, 1536, 100 * KB, 99 * KB, KB),
}

# cudaOccLimitingFactor bits, and the limiter each one names.
FACTORS = {0x01: "threads", 0x02: "registers", 0x04: "shared memory", 0x08: "blocks per SM"}
WHY_FACTOR = {"threads per block": 0x01, "registers": 0x02, "shared memory": 0x04}

PROGRAM = r"""
#include <cstdio>
#include "%s"

// stdin: major minor threadsPerSM smemPerSM smemOptin reserved blockSize numRegs static dynamic
// stdout: activeBlocksPerMultiprocessor limitingFactors (or "error N")
int main() {
    int major, minor, threadsPerSm, blockSize, numRegs;
    size_t smemPerSm, smemOptin, reserved, staticSmem, dynamicSmem;
    while (scanf("%%d %%d %%d %%zu %%zu %%zu %%d %%d %%zu %%zu", &major, &minor, &threadsPerSm, &smemPerSm,
                 &smemOptin, &reserved, &blockSize, &numRegs, &staticSmem, &dynamicSmem) == 10) {
        cudaOccDeviceProp prop;
        prop.computeMajor = major;
        prop.computeMinor = minor;
        prop.maxThreadsPerBlock = 1024;
        prop.maxThreadsPerMultiprocessor = threadsPerSm;
        prop.regsPerBlock = 65536;
        prop.regsPerMultiprocessor = 65536;
        prop.warpSize = 32;
        prop.sharedMemPerBlock = 48 * 1024;
        prop.sharedMemPerMultiprocessor = smemPerSm;
        prop.numSms = 1;
        prop.sharedMemPerBlockOptin = smemOptin;
        prop.reservedSharedMemPerBlock = reserved;

        cudaOccFuncAttributes attr;  // partitionedGCConfig off, no virtual resources
        attr.maxThreadsPerBlock = 1024;
        attr.numRegs = numRegs;
        attr.sharedSizeBytes = staticSmem;
        attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;  // the kernel opted in to the per-block maximum
        attr.maxDynamicSharedSizeBytes = staticSmem < smemOptin ? smemOptin - staticSmem : 0;
        attr.numBlockBarriers = 1;  // what cudaOccFuncAttributes(cudaFuncAttributes) sets

        cudaOccDeviceState state;
        state.carveoutConfig = SHAREDMEM_CARVEOUT_MAX_SHARED;

        cudaOccResult result;
        cudaOccError err = cudaOccMaxActiveBlocksPerMultiprocessor(&result, &prop, &attr, &state, blockSize, dynamicSmem);
        if (err != CUDA_OCC_SUCCESS) printf("error %%d\n", (int)err);
        else printf("%%d %%u\n", result.activeBlocksPerMultiprocessor, result.limitingFactors);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def calculator(tmp_path_factory):
    """Answers launches with cuda_occupancy.h: calculator([(arch, threads, regs, shared), ...]) -> [(blocks, factors)]."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed: cannot build the cuda_occupancy.h reference")
    if not os.path.isfile(HEADER):
        pytest.skip(f"{HEADER} is missing (no CUDA toolkit): no reference to compare with")
    work = tmp_path_factory.mktemp("occ")
    (work / "occ.cpp").write_text(PROGRAM % HEADER)
    subprocess.run([gxx, "-O1", "-std=c++11", "-o", str(work / "occ"), str(work / "occ.cpp")], check=True, capture_output=True, text=True)

    def ask(cases):
        lines = []
        for arch, threads, regs, shared in cases:
            major, minor, threads_sm, smem_sm, optin, reserved = PUBLISHED[arch]
            static = min(shared // 2, 48 * KB)  # the header adds static and dynamic; split them to exercise both
            lines.append(f"{major} {minor} {threads_sm} {smem_sm} {optin} {reserved} {threads} {regs} {static} {shared - static}")
        out = subprocess.run([str(work / "occ")], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True).stdout.split("\n")
        answers = []
        for line in out[: len(cases)]:
            assert not line.startswith("error"), line
            blocks, factors = line.split()
            answers.append((int(blocks), int(factors)))
        assert len(answers) == len(cases)
        return answers

    return ask


def shared_sizes(arch):
    optin = PUBLISHED[arch][4]
    edges = [0, 1, 127, 128, 129, 1000, 2 * KB, 4 * KB, 8 * KB - 1, 12 * KB, 16 * KB, 24 * KB, 32 * KB + 1, 48 * KB, 48 * KB + 1, 64 * KB, 99 * KB]
    return sorted({s for s in edges if s <= optin} | set(range(0, optin + 1, optin // 23)) | {optin - 1, optin, optin + 1, optin + 128})


def compare(calculator, arch, threads_list, regs_list):
    cases = [(arch, t, r, s) for t in threads_list for r in regs_list for s in shared_sizes(arch)]
    mismatches, wrong_limiter = [], []
    for case, (blocks, factors) in zip(cases, calculator(cases), strict=True):
        ours = occupancy(*case)
        assert ours is not None
        if ours.blocks_per_sm != blocks:
            mismatches.append((case, ours.blocks_per_sm, blocks))
            continue
        if blocks == 0:
            named = [bit for word, bit in WHY_FACTOR.items() if word in ours.why]
            if ours.limiter != "does not fit" or not named or not named[0] & factors:
                wrong_limiter.append((case, ours.limiter, ours.why, factors))
            continue
        flagged = {name for bit, name in FACTORS.items() if bit & factors}
        # Ours names every factor the header flags, and no other.
        if set(ours.limiter.split(" and ")) != flagged:
            wrong_limiter.append((case, ours.limiter, sorted(flagged)))
        assert ours.warps_per_sm == blocks * -(-case[1] // 32)
    assert not mismatches, f"{len(mismatches)} of {len(cases)} differ from cuda_occupancy.h, e.g. {mismatches[:5]}"
    assert not wrong_limiter, f"{len(wrong_limiter)} limiters differ, e.g. {wrong_limiter[:5]}"
    return len(cases)


THREADS = [*range(32, 1025, 32), 1, 33, 100, 257, 1000, 1025, 2048]


@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89", "sm_90"])
def test_matches_cuda_occupancy_header(calculator, arch):
    # Registers are allocated 8 a thread (256 a warp): 8k and 8k+1 sit on both sides of every step.
    regs = sorted({0, 255, *range(16, 256, 8), *range(17, 256, 8)})
    assert compare(calculator, arch, THREADS, regs) > 50_000


@pytest.mark.parametrize("arch", ["sm_70", "sm_75", "sm_87", "sm_100", "sm_103", "sm_120"])
def test_other_archs_match_header(calculator, arch):
    compare(calculator, arch, [32, 64, 96, 128, 160, 256, 384, 512, 640, 768, 1024, 1025], [0, 16, 24, 32, 40, 56, 64, 72, 96, 128, 168, 200, 232, 255])


def test_known_cases():
    # 240 registers: 7680 per warp, 2 warps per 16K-register sub-partition, 8 warps per SM = one 256-thread block.
    occ = occupancy("sm_90a", 256, 240, 1024)
    assert occ is not None
    assert (occ.arch, occ.blocks_per_sm, occ.warps_per_sm, occ.max_warps_per_sm, occ.limiter, occ.why) == ("sm_90a", 1, 8, 64, "registers", "")
    # 2048 threads / 128; 32 registers also allow exactly 16: both are named (easing one alone would not help).
    occ = occupancy("sm_90", 128, 32, 0)
    assert occ is not None and (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (16, 64, "threads and registers")
    # 32-thread blocks on sm_86: 16 resident blocks at most, though 48 warps would fit.
    occ = occupancy("sm_86", 32, 32, 0)
    assert occ is not None and (occ.blocks_per_sm, occ.warps_per_sm, occ.max_warps_per_sm, occ.limiter) == (16, 16, 48, "blocks per SM")
    # 48 KB + the 1 KB reservation = 50176 bytes; 164 KB holds 3 of them.
    occ = occupancy("sm_80", 128, 32, 48 * KB)
    assert occ is not None and (occ.blocks_per_sm, occ.limiter) == (3, "shared memory")
    # A partial warp costs a whole one.
    occ = occupancy("sm_90", 33, 32, 0)
    assert occ is not None and (occ.blocks_per_sm, occ.warps_per_sm) == (32, 64)


def test_does_not_fit():
    occ = occupancy("sm_90", 128, 32, 227 * KB + 1)
    assert occ is not None and (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (0, 0, "does not fit")
    assert "shared memory" in occ.why and str(227 * KB) in occ.why
    fits = occupancy("sm_90", 128, 32, 227 * KB)
    assert fits is not None and fits.blocks_per_sm == 1
    occ = occupancy("sm_86", 1024, 255, 0)
    assert occ is not None and occ.blocks_per_sm == 0 and "registers per block" in occ.why
    occ = occupancy("sm_90", 1025, 16, 0)
    assert occ is not None and occ.blocks_per_sm == 0 and "threads per block" in occ.why
    occ = occupancy("sm_90", 32, 256, 0)
    assert occ is not None and occ.blocks_per_sm == 0 and "registers per thread" in occ.why


def test_arch_names():
    for name in ["sm_90a", "sm_90", "90", "compute_90a", "SM_90A"]:
        lim = arch_limits(name)
        assert lim is not None and lim.name == "sm_90" and lim.max_shared_per_block == 227 * KB
    lim = arch_limits("sm_100a")
    assert lim is not None and lim.name == "sm_100"
    for name in ["sm_61", "sm_99", "gfx90a", "", "sm_", "sm_90x"]:
        assert arch_limits(name) is None
    assert occupancy("sm_61", 128, 32, 0) is None


def test_limits_table():
    # The Programming Guide's table, and cuda_occupancy.h's allocation units.
    rows = {name: arch_limits(name) for name in PUBLISHED}
    assert all(lim is not None for lim in rows.values())
    for name, (_, _, threads_sm, smem_sm, optin, reserved) in PUBLISHED.items():
        lim = rows[name]
        assert lim is not None
        shared = (lim.shared_per_sm, lim.max_shared_per_block, lim.reserved_shared_per_block)
        assert (lim.max_threads_per_sm, *shared) == (threads_sm, smem_sm, optin, reserved), name
        regs = (lim.regs_per_sm, lim.max_regs_per_block, lim.max_regs_per_thread, lim.reg_alloc_unit)
        assert (*regs, lim.warp_size, lim.sub_partitions, lim.max_threads_per_block) == (65536, 65536, 255, 256, 32, 4, 1024), name
        assert lim.shared_alloc_unit == (128 if reserved else 256)
    blocks = {name: lim.max_blocks_per_sm for name, lim in rows.items() if lim is not None}
    assert blocks == {"sm_70": 32, "sm_75": 16, "sm_80": 32, "sm_86": 16, "sm_87": 16, "sm_89": 24, "sm_90": 32, "sm_100": 32, "sm_103": 32, "sm_120": 24}


def test_bad_launch():
    with pytest.raises(ValueError):
        occupancy("sm_90", 0, 32, 0)
    with pytest.raises(ValueError):
        occupancy("sm_90", 128, -1, 0)
