"""Check 1: ``tenplex.should_stop`` inside a real process group of one rank with ``--backend`` (nccl,
cpu:gloo,cuda:nccl or gloo): the flag is broadcast on the group's device, and the answers follow the
daemon's stop flag (not before its step, from its step on, and not once it is cleared)."""

import os
import tempfile

from checkutil import Skip, arguments, exit_with, main


def run(a):
    import torch
    import torch.distributed as dist

    import tenplex
    from tenplex.wire import torch_values

    if "nccl" in a.backend and not torch.cuda.is_available():
        raise Skip("no CUDA device for %s" % a.backend)
    if "nccl" in a.backend:
        torch.cuda.set_device(0)
    c = tenplex.Client(a.addr)
    job = "gpu-check-stop-%d" % os.getpid()
    c.request("PUT", "/api/v1/dirs/job/%s" % job, ok=(200, 201))
    with tempfile.TemporaryDirectory() as tmp:
        store = dist.FileStore(os.path.join(tmp, "store"), 1)
        dist.init_process_group(a.backend, store=store, rank=0, world_size=1)
        try:
            device = str(torch_values.flag_device())
            want = "cpu" if torch_values.device_kind_for_backend(dist.get_backend()) == "cpu" else "cuda"
            assert device.startswith(want), (device, want, dist.get_backend())
            group = dist.new_group([0])
            answers = [tenplex.should_stop(job, 0, client=c)]
            c.request("POST", "/api/v1/jobs/%s/stop" % job, json={"atStep": 3})
            answers += [tenplex.should_stop(job, 2, client=c, group=group), tenplex.should_stop(job, 3, client=c),
                        tenplex.should_stop(job, 4, client=c, group=group)]
            c.request("DELETE", "/api/v1/jobs/%s/stop" % job)
            answers.append(tenplex.should_stop(job, 5, client=c))
            assert answers == [False, False, True, True, False], answers
        finally:
            dist.destroy_process_group()
            c.request("DELETE", "/api/v1/dirs/job/%s" % job, ok=(200, 404), params={"recursive": "true"})
    return ("backend %s: flag on %s, answers %s" % (a.backend, device, answers),
            {"backend": a.backend, "flag_device": device})


if __name__ == "__main__":
    args = arguments(__doc__.split("\n")[0], lambda ap: ap.add_argument("--backend", default="gloo"))
    exit_with(main(run, args))
