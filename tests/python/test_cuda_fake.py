# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""gpuasync.GpuMapping's ctypes calls against a stand-in libcuda.so.1
(fake_cuda_ipc.c, built against cuda.h; $GA_FAKE_LIBCUDA), so that the
CUDA IPC code runs where there is no GPU.  The stand-in is loaded by its
path first: it carries the soname libcuda.so.1, so the package's
CDLL("libcuda.so.1") gets the same library.  What a real driver does with
a real buffer is python_gpu_ipc's part (gpu_ipc.sh, on a GPU machine)."""
import ctypes
import gc
import os
import struct

import pytest

import gpuasync


@pytest.fixture
def fake():
    path = os.environ.get("GA_FAKE_LIBCUDA")
    if not path:
        if os.environ.get("CI") == "true":
            pytest.fail("no GA_FAKE_LIBCUDA (built without cuda.h)")
        pytest.skip("no GA_FAKE_LIBCUDA (built without cuda.h)")
    lib = ctypes.CDLL(path)
    assert gpuasync._driver().lib._handle == lib._handle, "the package loaded another libcuda.so.1"
    yield lib
    gc.collect()
    assert state(lib) == (0, 0, 0), "mappings, retains, pushed contexts left"


def state(lib):
    maps, retains, depth = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    lib.fake_cuda_state(ctypes.byref(maps), ctypes.byref(retains), ctypes.byref(depth))
    return maps.value, retains.value, depth.value


def handle(size, seed):
    return (b"fakecuda" + struct.pack("<IB", size, seed)).ljust(64, b"\0")


def pattern(size, seed, offset=0):
    return bytes((seed + offset + i) & 0xff for i in range(size))


def test_open_read_write_close(fake):
    with gpuasync.GpuMapping(handle(5000, 7)) as m:
        assert m.size == 5000 and m.pointer and m.device == 0
        # open: one mapping, the primary context retained, none left pushed
        assert state(fake) == (1, 1, 0)
        assert m.read() == pattern(5000, 7)
        assert m.read(4990) == pattern(10, 7, 4990)
        assert m.read(100, 0) == b""
        m.write(b"\x01\x02\x03", 4997)
        assert m.read(4995, 5) == pattern(2, 7, 4995) + b"\x01\x02\x03"
        m.write(bytearray(b"xy"))
        assert m.read(0, 3) == b"xy" + pattern(1, 7, 2)
        for off, n in ((4999, 2), (-1, 1), (0, 5001), (5001, None)):
            with pytest.raises(ValueError):
                m.read(off, n)
        with pytest.raises(ValueError):
            m.write(b"abc", 4998)
        assert state(fake) == (1, 1, 0)
        assert "5000 bytes" in repr(m)
    assert state(fake) == (0, 0, 0)
    m.close()  # a second close does nothing
    with pytest.raises(ValueError):
        m.read()
    assert repr(m) == "<gpuasync.GpuMapping closed>"


def test_refusals_leave_nothing_open(fake):
    with pytest.raises(gpuasync.CudaError) as e:
        gpuasync.GpuMapping(bytes(64))
    assert e.value.call == "cuIpcOpenMemHandle_v2"
    assert e.value.name == "CUDA_ERROR_INVALID_HANDLE" and e.value.code == 400
    assert str(e.value) == "cuIpcOpenMemHandle_v2: CUDA_ERROR_INVALID_HANDLE (400)"
    assert state(fake) == (0, 0, 0)
    with pytest.raises(gpuasync.CudaError) as e:
        gpuasync.GpuMapping(handle(64, 0), device=1)
    assert e.value.call == "cuDeviceGet" and e.value.name == "CUDA_ERROR_INVALID_DEVICE"
    with pytest.raises(ValueError):
        gpuasync.GpuMapping(b"fakecuda")
    assert state(fake) == (0, 0, 0)


def test_garbage_collection_closes(fake):
    maps = [gpuasync.GpuMapping(handle(100, i)) for i in range(3)]
    assert state(fake) == (3, 3, 0)
    assert [m.read(0, 1) for m in maps] == [b"\0", b"\1", b"\2"]
    del maps
    gc.collect()
    assert state(fake) == (0, 0, 0)
