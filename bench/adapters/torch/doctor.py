"""PyTorch's answer to `bench doctor`: its CUDA build, cuDNN and NCCL, the GPUs it sees."""

from __future__ import annotations

from ..doctor import facts, first_line


def gpu_facts() -> dict:
    import torch

    gpus, reason = [], None
    try:
        torch.cuda.init()  # raises with the driver's own words where there is no GPU or driver
        for i in range(torch.cuda.device_count()):
            major, minor = torch.cuda.get_device_capability(i)
            gpus.append(f"cuda:{i} {torch.cuda.get_device_name(i)} (sm_{major}{minor})")
    except (RuntimeError, AssertionError) as exc:  # AssertionError: a CPU-only build ("not compiled with CUDA")
        reason = first_line(exc)
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None  # 92400: 9.24.0
    nccl = ".".join(map(str, torch.cuda.nccl.version())) if torch.distributed.is_nccl_available() else None
    cudnn_text = f"{cudnn // 10000}.{cudnn // 100 % 100}.{cudnn % 100}" if cudnn else None
    return facts(torch.__version__, f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU only", gpus,
                 reason if not gpus else None, cudnn=cudnn_text, nccl=nccl, gloo=torch.distributed.is_gloo_available())
