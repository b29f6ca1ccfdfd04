"""Data mode's tensor files (integrations/adapters/launch_data.py) read back by the repro script's own loader
(integrations/reruns/launch_script.py) -- every dtype bit for bit, held to torch's own bytes: the ones numpy
has as themselves, bfloat16 and float8 (numpy has neither) as unsigned integers of their width; numpy reads
each with allow_pickle=False; a tensor with strides is laid out again as recorded."""

import numpy
import pytest

torch = pytest.importorskip("torch")

from lower_trace.integrations.adapters.launch_data import file_name, save_tensor  # noqa: E402
from lower_trace.integrations.reruns import launch_script  # noqa: E402

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.int32, torch.uint8, torch.bool]
if hasattr(torch, "float8_e4m3fn"):
    DTYPES.append(torch.float8_e4m3fn)


def raw(tensor):
    return tensor.contiguous().reshape(-1).view(torch.uint8).tolist()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_comes_back_bit_for_bit(tmp_path, dtype):
    values = torch.linspace(-3, 3, 24).reshape(4, 6)
    tensor = values.to(dtype) if dtype is not torch.bool else values > 0
    name = file_name("in", "A")
    written = save_tensor(str(tmp_path), name, tensor)
    assert written == tensor.numel() * tensor.element_size()
    array = numpy.load(tmp_path / name, allow_pickle=False)
    assert array.shape == (4, 6) and array.dtype.itemsize == tensor.element_size()
    entry = {"file": str(tmp_path / name), "dtype": str(dtype).removeprefix("torch."), "shape": [4, 6], "device": "cpu"}
    back = launch_script.load(entry, torch)
    assert back.dtype == dtype and raw(back) == raw(tensor)


def test_a_tensor_with_strides_is_kept_in_order_and_laid_out_again(tmp_path):
    base = torch.arange(48, dtype=torch.float32).reshape(6, 8)
    view = base.t()[::2]  # 4 x 6, strides (2, 8): not contiguous
    save_tensor(str(tmp_path), "in-X.npy", view)
    assert (numpy.load(tmp_path / "in-X.npy", allow_pickle=False) == view.contiguous().numpy()).all()
    entry = {"file": str(tmp_path / "in-X.npy"), "dtype": "float32", "shape": list(view.shape), "strides": list(view.stride()), "device": "cpu"}
    back = launch_script.load(entry, torch)
    assert back.stride() == view.stride() and torch.equal(back, view)


def test_the_comparison_names_the_first_difference_and_the_largest_errors():
    then = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    now = torch.tensor([[1.0, 2.5], [3.0, 2.0]])
    line = launch_script.compare("C", then, now, torch, None, None)
    # |2.5 - 2| = 0.5 (rel 0.25), |2 - 4| = 2 (rel 0.5): the first in row-major order is [0, 1]
    assert line == "differs at [0, 1]: 2 then, 2.5 now; 2 of 4 elements; max abs error 2, max rel error 0.5"
    assert launch_script.compare("C", then, then.clone(), torch, None, None) == "identical (bitwise)"
    assert launch_script.compare("C", then, now, torch, 2.0, None).startswith("matches within tolerance")
    nan = torch.tensor([float("nan"), 1.0])
    assert launch_script.compare("C", nan, nan.clone(), torch, None, None) == "identical (bitwise)"
