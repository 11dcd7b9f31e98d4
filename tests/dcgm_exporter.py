"""A small stand-in for NVIDIA's DCGM exporter: DCGM's metric names, values the test chooses.

    with running_dcgm([(40960, 40960, 30), (77824, 4096, 80)]) as url: ...   # url ends in /metrics

Each tuple is one GPU: frame-buffer MiB used, MiB free, utilisation %. Served over a real
socket on an ephemeral port (a thread of the test process), in the exposition format
``dcgm-exporter`` writes, with its labels. Not a product feature: there is no GPU here.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["dcgm_text", "running_dcgm"]


def dcgm_text(gpus: Sequence[tuple[float, float, float]]) -> str:
    lines = []
    for name, help_text, index in (
        ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", 1),
        ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", 0),
        ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", 2),
    ):
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        for i, gpu in enumerate(gpus):
            labels = (
                f'gpu="{i}",UUID="GPU-0000{i}",pci_bus_id="00000000:0{i}:00.0",device="nvidia{i}",'
                f'modelName="NVIDIA H100 80GB HBM3",Hostname="node-a"'
            )
            lines.append(f"{name}{{{labels}}} {gpu[index]:g}")
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def running_dcgm(gpus: Sequence[tuple[float, float, float]]) -> Iterator[str]:
    body = dcgm_text(gpus).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/metrics":
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
