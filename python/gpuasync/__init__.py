# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""gpuasync: a GpuAsyncCore card from Python, through a gpuasyncfs mount.

    import gpuasync
    card = gpuasync.Card("/mnt/gpuasync")
    print(card.device.version, card.registers.rx_frame_count)
    card.registers.demux_select = 1
    with card.create_buffer() as buf:          # mkdir buffers/N; rmdir on exit
        buf.arm()
        hdr = buf.wait_frame(timeout=5)        # poll(POLLPRI) on buffers/N/status
        payload = buf.data()                   # bytes; buf.numpy() with NumPy

    with buf.open_ipc() as gpu:                # GPU memory: the CUDA IPC handle
        gpu.pointer, gpu.read(0, 8)            # device pointer here; bytes via cuMemcpyDtoH

Standard library only; NumPy and CuPy are used when asked for and present,
and a GPU buffer is opened through ctypes over the CUDA driver
(libcuda.so.1), loaded on first use.
Names come from the mount's own listing (registers/, device/, ...), so the
package has no register table of its own: what the mount shows is what it
has.  A refused request raises GpuAsyncError, an OSError carrying the
mount's `errors` line that says why.
"""
import collections
import contextlib
import ctypes
import errno as _errno
import os
import select
import threading
import time

# The project's version (CMakeLists.txt); tests/python/pip.sh holds them equal.
__version__ = "0.1.0"

__all__ = ["Card", "Buffer", "Header", "GpuAsyncError", "GpuMapping", "CudaError"]


class GpuAsyncError(OSError):
    """An OSError from the mount, with the `errors` line that explains it
    (the `reason` attribute; None when the daemon logged none)."""

    def __init__(self, err, path, reason):
        super().__init__(err.errno, err.strerror, path)
        self.reason = reason

    def __str__(self):
        base = super().__str__()
        return "%s (%s)" % (base, self.reason) if self.reason else base


Header = collections.namedtuple(
    "Header", "size result overflow cont first_user last_user")
"""A buffer's last frame descriptor, as buffers/N/header decodes it."""


# -- CUDA IPC: a GPU buffer in this process -----------------------------------
#
# The mount exports each GPU buffer with cuIpcGetMemHandle (buffers/N/ipc_handle,
# 64 bytes as hex).  Opening it takes a handful of CUDA Driver API calls, made
# here through ctypes so that no CUDA Python package is needed.  Every call
# runs with the device's primary context pushed and popped again, so the
# caller's current context is left as it was, and the pointer is valid in
# that primary context: the one the CUDA runtime (CuPy, PyTorch) uses.

class CudaError(RuntimeError):
    """A CUDA driver call that failed: `call` names it, `code` is its
    CUresult and `name` the error's name (CUDA_ERROR_NO_DEVICE, ...).  When
    libcuda.so.1 cannot be loaded or lacks a function, `call` is "dlopen" or
    "dlsym", `code` None and `name` says what."""

    def __init__(self, call, code, name):
        super().__init__("%s: %s" % (call, name if code is None else "%s (%d)" % (name, code)))
        self.call = call
        self.code = code
        self.name = name


class _IpcMemHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_ubyte * 64)]  # CU_IPC_HANDLE_SIZE


_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1
_CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12


class _Driver:
    """libcuda.so.1, its prototypes, cuInit done.  One per process
    (_driver()).  The _v2 names are the symbols cuda.h maps the calls to."""

    _protos = {
        "cuInit": [ctypes.c_uint],
        "cuGetErrorName": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
        "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
        "cuDevicePrimaryCtxRetain": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int],
        "cuDevicePrimaryCtxRelease_v2": [ctypes.c_int],
        "cuCtxPushCurrent_v2": [ctypes.c_void_p],
        "cuCtxPopCurrent_v2": [ctypes.POINTER(ctypes.c_void_p)],
        "cuIpcOpenMemHandle_v2": [ctypes.POINTER(ctypes.c_uint64), _IpcMemHandle, ctypes.c_uint],
        "cuIpcCloseMemHandle": [ctypes.c_uint64],
        "cuPointerGetAttribute": [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64],
        "cuMemcpyDtoH_v2": [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t],
        "cuMemcpyHtoD_v2": [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t],
    }

    def __init__(self):
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise CudaError("dlopen", None, "libcuda.so.1: %s" % e) from None
        for name, args in self._protos.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise CudaError("dlsym", None, "libcuda.so.1 has no %s" % name) from None
            fn.argtypes = args
            fn.restype = ctypes.c_int
        self.lib = lib
        self.call("cuInit", 0)

    def call(self, name, *args):
        r = getattr(self.lib, name)(*args)
        if r != 0:
            text = ctypes.c_char_p()
            self.lib.cuGetErrorName(r, ctypes.byref(text))
            raise CudaError(name, r, text.value.decode() if text.value else "unknown error")


_driver_lock = threading.Lock()
_driver_once = None


def _driver():
    global _driver_once
    with _driver_lock:
        if _driver_once is None:
            _driver_once = _Driver()
        return _driver_once


class GpuMapping:
    """GPU memory opened in this process through a CUDA IPC handle
    (Buffer.open_ipc(), or GpuMapping(handle) with the 64 bytes of any
    cuIpcGetMemHandle).  `pointer` is the device pointer in the primary
    context of CUDA device `device` of this process, `size` the bytes of
    the allocation as CUDA reports them.  close() (or the end of a with
    block, or garbage collection) unmaps it; the memory itself stays the
    exporter's, valid while its buffer exists."""

    def __init__(self, handle, device=0):
        self.pointer = None
        handle = bytes(handle)
        if len(handle) != ctypes.sizeof(_IpcMemHandle):
            raise ValueError("a CUDA IPC handle is %d bytes, not %d"
                             % (ctypes.sizeof(_IpcMemHandle), len(handle)))
        self.device = device
        self._cu = _driver()
        dev = ctypes.c_int()
        ctx = ctypes.c_void_p()
        self._cu.call("cuDeviceGet", ctypes.byref(dev), device)
        self._cu.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        self._dev, self._ctx = dev, ctx
        try:
            ptr = ctypes.c_uint64()
            size = ctypes.c_size_t()
            with self._current():
                self._cu.call("cuIpcOpenMemHandle_v2", ctypes.byref(ptr),
                              _IpcMemHandle.from_buffer_copy(handle),
                              _CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
                try:
                    self._cu.call("cuPointerGetAttribute", ctypes.byref(size),
                                  _CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr)
                except CudaError:
                    self._cu.call("cuIpcCloseMemHandle", ptr)
                    raise
        except BaseException:
            self._cu.call("cuDevicePrimaryCtxRelease_v2", dev)
            raise
        self.pointer = ptr.value
        self.size = size.value

    def __repr__(self):
        if self.pointer is None:
            return "<gpuasync.GpuMapping closed>"
        return "<gpuasync.GpuMapping 0x%x, %d bytes, device %d>" % (
            self.pointer, self.size, self.device)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass  # at interpreter exit the driver may be gone already

    @contextlib.contextmanager
    def _current(self):
        # This mapping's context, current for the calls in the block only.
        self._cu.call("cuCtxPushCurrent_v2", self._ctx)
        try:
            yield
        finally:
            self._cu.call("cuCtxPopCurrent_v2", ctypes.byref(ctypes.c_void_p()))

    def _range(self, offset, length):
        if self.pointer is None:
            raise ValueError("GpuMapping is closed")
        if length is None:
            length = self.size - offset
        if offset < 0 or length < 0 or offset + length > self.size:
            raise ValueError("bytes %d..%d are outside the %d-byte mapping"
                             % (offset, offset + length, self.size))
        return length

    def read(self, offset=0, length=None):
        """length bytes (to the end when None) at offset, as bytes
        (cuMemcpyDtoH)."""
        length = self._range(offset, length)
        out = ctypes.create_string_buffer(length)
        if length:
            with self._current():
                self._cu.call("cuMemcpyDtoH_v2", out, self.pointer + offset, length)
        return out.raw

    def write(self, data, offset=0):
        """Copy data (bytes-like) into the mapping at offset (cuMemcpyHtoD)."""
        data = bytes(data)
        self._range(offset, len(data))
        if data:
            with self._current():
                self._cu.call("cuMemcpyHtoD_v2", self.pointer + offset, data, len(data))

    def close(self):
        """Unmap (cuIpcCloseMemHandle) and release the primary context;
        a second close does nothing."""
        if self.pointer is None:
            return
        ptr, self.pointer = self.pointer, None
        try:
            with self._current():
                self._cu.call("cuIpcCloseMemHandle", ptr)
        finally:
            self._cu.call("cuDevicePrimaryCtxRelease_v2", self._dev)


def _parse_value(text):
    text = text.strip()
    try:
        return int(text, 0)
    except ValueError:
        return text


class _Dir:
    """The files of one mount directory as attributes: reading gives an int
    when the text is a number, else the text; assigning writes the value.
    Subdirectories and binary files are not attributes."""

    _binary = frozenset(["raw", "data", "push", "last_read"])

    def __init__(self, card, rel):
        object.__setattr__(self, "_card", card)
        object.__setattr__(self, "_rel", rel)

    def _path(self, name):
        return os.path.join(self._card.path, self._rel, name)

    def names(self):
        """Every attribute this directory has now, sorted."""
        d = os.path.join(self._card.path, self._rel)
        return sorted(n for n in os.listdir(d) if n not in self._binary and
                      os.path.isfile(os.path.join(d, n)))

    def __dir__(self):
        return self.names()

    def _check(self, name):
        if name.startswith("_") or name in self._binary or \
                not os.path.isfile(self._path(name)):
            raise AttributeError("%s has no file %r" % (self._rel or "/", name))

    def __getattr__(self, name):
        self._check(name)
        return _parse_value(self._card.read(os.path.join(self._rel, name)))

    def __setattr__(self, name, value):
        self._check(name)
        self._card.write(os.path.join(self._rel, name), value)

    def __iter__(self):
        return iter(self.names())

    def as_dict(self):
        """Every readable attribute's value (files that refuse reads, such as
        write-only triggers, are left out)."""
        out = {}
        for n in self.names():
            try:
                out[n] = getattr(self, n)
            except OSError:
                pass
        return out


class Buffer:
    """One buffer directory (buffers/N, or read_buffers/N for a read buffer).
    As a context manager it removes the buffer on exit."""

    def __init__(self, card, index, read=False):
        self.card = card
        self.index = index
        self.read_buffer = read
        self.rel = os.path.join("read_buffers" if read else "buffers", str(index))

    def __repr__(self):
        return "<gpuasync.Buffer %s>" % self.rel

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if os.path.isdir(os.path.join(self.card.path, self.rel)):
            self.remove()
        return False

    def _file(self, name):
        return os.path.join(self.rel, name)

    @property
    def status(self):
        return self.card.read(self._file("status")).strip()

    @property
    def size(self):
        return int(self.card.read(self._file("size")), 0)

    @property
    def gpu_address(self):
        return int(self.card.read(self._file("gpu_address")), 0)

    @property
    def header(self):
        """The last frame's descriptor (write buffers)."""
        fields = dict(kv.split("=", 1) for kv in self.card.read(self._file("header")).split())
        return Header(**{k: int(fields[k], 0) for k in Header._fields})

    def arm(self):
        """Put the buffer on the card's free list (write_enable = 1)."""
        self.card.write(self._file("write_enable"), 1)

    def send(self, nbytes):
        """Queue a GPU->FPGA read of nbytes payload bytes (read buffers)."""
        self.card.write(self._file("send"), nbytes)

    def data(self):
        """The last frame's payload (write buffers) or the payload area
        (read buffers), as bytes."""
        with open(os.path.join(self.card.path, self._file("data")), "rb") as f:
            return f.read()

    def write_data(self, payload, offset=0):
        """Write payload into a read buffer's payload area at offset."""
        fd = os.open(os.path.join(self.card.path, self._file("data")), os.O_WRONLY)
        try:
            self.card._call(self._file("data"), os.pwrite, fd, bytes(payload), offset)
        finally:
            os.close(fd)

    def numpy(self, dtype="uint8"):
        """The payload as a NumPy array (a copy read through the mount)."""
        import numpy
        return numpy.frombuffer(self.data(), dtype=dtype)

    def ipc_handle(self):
        """The buffer's CUDA IPC handle, 64 bytes (GPU memory only: a host
        memory buffer has no ipc_handle file, GpuAsyncError ENOENT)."""
        return bytes.fromhex(self.card.read(self._file("ipc_handle")).strip())

    def open_ipc(self, device=0):
        """The whole GPU buffer in this process, through its CUDA IPC handle:
        a GpuMapping (pointer, size, read, write, close; a context
        manager), mapped on CUDA device `device` of this process (the
        buffer's own GPU: the mount's -o gpu, 0 by default)."""
        return GpuMapping(self.ipc_handle(), device)

    def gpu_bytes(self, offset=0, length=None, device=0):
        """Bytes of the GPU buffer itself, read through its IPC handle (a
        write buffer: the header at 0, the payload at dma_data_bytes)."""
        with self.open_ipc(device) as m:
            return m.read(offset, length)

    def cupy(self, dtype="uint8", device=0):
        """The whole GPU buffer as a CuPy array over open_ipc()'s mapping,
        which stays open while the array (or a view of it) lives.  Not run
        by any test: no CuPy where this project is tested (docs/python.md)."""
        import cupy
        m = self.open_ipc(device)
        mem = cupy.cuda.UnownedMemory(m.pointer, m.size, m, device)  # m: the owner
        n = m.size // cupy.dtype(dtype).itemsize
        with cupy.cuda.Device(device):
            return cupy.ndarray((n,), dtype=dtype, memptr=cupy.cuda.MemoryPointer(mem, 0))

    def wait_frame(self, timeout=None):
        """Wait until a frame has landed (status READY); its Header."""
        self.card.wait(self._file("status"), lambda s: s.strip() == "READY", timeout)
        return self.header

    def remove(self):
        self.card._call(self.rel, os.rmdir, os.path.join(self.card.path, self.rel))


class Card:
    """A card through its gpuasyncfs mount point."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        if not os.path.isfile(os.path.join(self.path, "device", "version")):
            raise FileNotFoundError(_errno.ENOENT, "not a gpuasyncfs mount "
                                    "(no device/version)", self.path)
        self.registers = _Dir(self, "registers")
        self.device = _Dir(self, "device")
        self.firmware = _Dir(self, os.path.join("device", "firmware"))
        self.sim = _Dir(self, "sim") if os.path.isdir(os.path.join(self.path, "sim")) else None

    def __repr__(self):
        return "<gpuasync.Card %s>" % self.path

    # -- plain file access, with the errors line on failure -----------------
    def errors(self):
        """The mount's `errors` lines, oldest first."""
        with open(os.path.join(self.path, "errors")) as f:
            return f.read().splitlines()

    def _reason(self, rel, before):
        # The newest errors line about this path that was not there before.
        for line in reversed(self.errors()):
            if line in before:
                break
            if rel in line:
                return line
        return None

    def _call(self, rel, fn, *args):
        before = set(self.errors())
        try:
            return fn(*args)
        except OSError as e:
            raise GpuAsyncError(e, os.path.join(self.path, rel), self._reason(rel, before)) from None

    def read(self, rel):
        """The text of a file under the mount (rel: e.g. 'registers/version')."""
        def rd(p):
            with open(p) as f:
                return f.read()
        try:
            return self._call(rel, rd, os.path.join(self.path, rel))
        except GpuAsyncError as e:
            # A write-only strobe refused to a reader leaves no errors line
            # (its mode says so): say it here.
            if e.reason is None and e.errno == _errno.EACCES and \
                    not os.stat(os.path.join(self.path, rel)).st_mode & 0o444:
                e.reason = "%s: EACCES: write-only file: it triggers an action " \
                    "and has no value to read" % rel
            raise

    def write(self, rel, value):
        """Write a value (str, int or bytes) to a file under the mount, as echo does."""
        data = value if isinstance(value, bytes) else ("%s\n" % value).encode()

        def wr(p):
            fd = os.open(p, os.O_WRONLY)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        self._call(rel, wr, os.path.join(self.path, rel))

    # -- pyrogue names --------------------------------------------------------
    def pyrogue_names(self):
        """{pyrogue variable below AxiPcieCore: file under the mount}, from
        the mount's `pyrogue` index ('AxiGpuAsyncCore.RxFrameCnt':
        'registers/rx_frame_count')."""
        out = {}
        for line in self.read("pyrogue").splitlines():
            if line and not line.startswith("#"):
                name, rel = line.split()
                out[name] = rel
        return out

    def pyrogue(self, name):
        """The value of the file pyrogue calls name ('AxiGpuAsyncCore.RxFrameCnt',
        'AxiVersion.GitHash'); KeyError when no file has that name."""
        return _parse_value(self.read(self.pyrogue_names()[name]))

    # -- buffers ------------------------------------------------------------
    def buffers(self, read=False):
        """The buffers that exist now, by index."""
        d = os.path.join(self.path, "read_buffers" if read else "buffers")
        return [Buffer(self, int(n), read) for n in sorted(os.listdir(d), key=_index_key)
                if n.isdigit()]

    def create_buffer(self, size=None, read=False):
        """mkdir the next buffer (its index is the number of buffers before
        it), size bytes when given (alloc_size otherwise); a Buffer that
        removes itself when used as a context manager."""
        top = "read_buffers" if read else "buffers"
        if size is not None:
            self.write(os.path.join(top, "alloc_size"), size)
        index = len(self.buffers(read))
        rel = os.path.join(top, str(index))
        self._call(rel, os.mkdir, os.path.join(self.path, rel))
        return Buffer(self, index, read)

    # -- waiting ------------------------------------------------------------
    def wait(self, rel, predicate, timeout=None):
        """Wait until predicate(text of file rel) is true, woken by the
        mount's poll(POLLPRI) on live files; the text.  TimeoutError after
        timeout seconds (None: no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self._call(rel, os.open, os.path.join(self.path, rel), os.O_RDONLY)
        try:
            p = select.poll()
            p.register(fd, select.POLLPRI | select.POLLERR)
            while True:
                text = self._call(rel, os.pread, fd, 65536, 0).decode()
                if predicate(text):
                    return text
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError("%s: still %r after %s s" % (rel, text.strip(), timeout))
                p.poll(None if left is None else max(1, int(left * 1000)))
        finally:
            os.close(fd)

    def wait_counter(self, name, at_least, timeout=None):
        """Wait until registers/<name> reaches at_least; its value."""
        return int(self.wait(os.path.join("registers", name),
                             lambda t: int(t, 0) >= at_least, timeout), 0)


def _index_key(name):
    return int(name) if name.isdigit() else -1
