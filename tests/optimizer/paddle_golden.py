"""Records Paddle 3.x's behaviour as data for tests/optimizer (never imported by the tests).

Run with a separate venv that has paddlepaddle (never a dependency of hwport):
    /work/paddle-venv3/bin/python tests/optimizer/paddle_golden.py
It writes data/paddle_signatures.json (the public signatures the tests compare with hwport's)
and data/paddle_golden.json (parameter trajectories of Paddle's CPU optimizers for fixed
gradients: loss = sum(p * G_t) gives grad G_t; scheduler lr sequences; state_dict keys)."""

from __future__ import annotations

import inspect
import json
import math
from pathlib import Path

import numpy as np
import paddle
from lr_cases import scheduler_makers  # run as a script from this folder

HERE = Path(__file__).resolve().parent / "data"
paddle.set_device("cpu")


def params_of(fn):
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.name == "self":
            continue
        default = None if p.default is inspect.Parameter.empty else p.default
        if isinstance(default, float) and not math.isfinite(default):
            default = str(default)
        out.append({"name": p.name, "kind": p.kind.name,
                    "required": p.default is inspect.Parameter.empty, "default": default})
    return out


def signatures():
    o, lr, nn = paddle.optimizer, paddle.optimizer.lr, paddle.nn
    sig = {"version": paddle.__version__, "classes": {}, "methods": {}}
    classes = {"optimizer.Optimizer": o.Optimizer, "optimizer.SGD": o.SGD,
               "optimizer.Momentum": o.Momentum, "optimizer.Adam": o.Adam,
               "optimizer.AdamW": o.AdamW, "optimizer.lr.LRScheduler": lr.LRScheduler,
               "optimizer.lr.LinearWarmup": lr.LinearWarmup,
               "optimizer.lr.CosineAnnealingDecay": lr.CosineAnnealingDecay,
               "optimizer.lr.StepDecay": lr.StepDecay, "optimizer.lr.LambdaDecay": lr.LambdaDecay,
               "optimizer.lr.MultiStepDecay": lr.MultiStepDecay,
               "optimizer.lr.ExponentialDecay": lr.ExponentialDecay,
               "nn.ClipGradByGlobalNorm": nn.ClipGradByGlobalNorm,
               "nn.ClipGradByNorm": nn.ClipGradByNorm, "nn.ClipGradByValue": nn.ClipGradByValue}
    for key, cls in classes.items():
        sig["classes"][key] = params_of(cls.__init__)
    for m in ["step", "clear_grad", "state_dict", "set_state_dict", "get_lr", "set_lr",
              "set_lr_scheduler", "minimize", "zero_grad"]:
        sig["methods"]["optimizer.Optimizer." + m] = params_of(getattr(o.Optimizer, m))
    for m in ["step", "get_lr", "state_dict", "set_state_dict", "__call__"]:
        sig["methods"]["optimizer.lr.LRScheduler." + m] = params_of(getattr(lr.LRScheduler, m))
    return sig


def make_params(dtype, w_reg=None):
    rng = np.random.default_rng(7)
    w0 = rng.standard_normal((3, 4)).astype(dtype)
    b0 = rng.standard_normal((4,)).astype(dtype)
    attr = None if w_reg is None else paddle.ParamAttr(
        regularizer=paddle.regularizer.L2Decay(w_reg))
    w = paddle.create_parameter([3, 4], dtype, attr=attr,
                                default_initializer=paddle.nn.initializer.Assign(w0))
    b = paddle.create_parameter([4], dtype, is_bias=True,
                                default_initializer=paddle.nn.initializer.Assign(b0))
    return [w, b], [w0, b0]


def grads(steps, dtype):
    rng = np.random.default_rng(11)
    return [[rng.standard_normal((3, 4)).astype(dtype) * 3, rng.standard_normal((4,)).astype(dtype)]
            for _ in range(steps)]


def run(make_opt, dtype="float64", steps=3, sched=None, w_reg=None):
    ps, init = make_params(dtype, w_reg)
    gs = grads(steps, dtype)
    opt = make_opt(ps)
    traj, lrs = [], []
    for t in range(steps):
        loss = sum((p * paddle.to_tensor(g)).sum() for p, g in zip(ps, gs[t], strict=True))
        loss.backward()
        lrs.append(opt.get_lr())
        opt.step()
        opt.clear_grad()
        if sched is not None:
            sched.step()
        traj.append([p.numpy().tolist() for p in ps])
    keys = sorted(k for k in opt.state_dict())
    return {"dtype": dtype, "init": [a.tolist() for a in init],
            "grads": [[g.tolist() for g in gt] for gt in gs], "params": traj, "lrs": lrs,
            "names": [p.name for p in ps], "state_keys": keys}


def cases():
    o, nn = paddle.optimizer, paddle.nn
    out = {}
    out["sgd_wd"] = run(lambda ps: o.SGD(0.1, parameters=ps, weight_decay=0.01))
    # (rescale_grad: Paddle's CPU momentum kernel ignores it; hwport applies it, as Paddle's
    # GPU kernel and its documentation do; checked against numpy in test_optimizers.py)
    out["momentum"] = run(lambda ps: o.Momentum(0.1, 0.9, parameters=ps, weight_decay=0.01))
    out["momentum_nesterov"] = run(lambda ps: o.Momentum(0.05, 0.8, parameters=ps,
                                                         use_nesterov=True))
    out["adam"] = run(lambda ps: o.Adam(0.01, parameters=ps))
    out["adam_wd_eps"] = run(lambda ps: o.Adam(0.01, beta1=0.8, beta2=0.9, epsilon=0.5,
                                               parameters=ps, weight_decay=0.1), steps=4)
    out["adam_amsgrad"] = run(lambda ps: o.Adam(0.01, parameters=ps, amsgrad=True), steps=4)
    out["adam_f32"] = run(lambda ps: o.Adam(0.01, parameters=ps), dtype="float32")
    out["adamw"] = run(lambda ps: o.AdamW(0.05, parameters=ps, weight_decay=0.1))
    out["adamw_decay_fun"] = run(lambda ps: o.AdamW(
        0.05, parameters=ps, weight_decay=0.2, epsilon=0.1,
        apply_decay_param_fun=lambda n: n == ps[0].name))  # (lr_ratio: GPU/XPU only)
    out["adamw_f32"] = run(lambda ps: o.AdamW(0.05, parameters=ps), dtype="float32")
    out["clip_global"] = run(lambda ps: o.SGD(0.1, parameters=ps,
                                              grad_clip=nn.ClipGradByGlobalNorm(1.0)))
    out["clip_norm"] = run(lambda ps: o.Momentum(0.1, parameters=ps,
                                                 grad_clip=nn.ClipGradByNorm(0.5)), dtype="float32")
    out["clip_value"] = run(lambda ps: o.SGD(0.1, parameters=ps,
                                             grad_clip=nn.ClipGradByValue(0.3, -0.2)))
    out["adamw_clip_global_wd_f32"] = run(lambda ps: o.AdamW(
        0.01, parameters=ps, weight_decay=0.05, grad_clip=nn.ClipGradByGlobalNorm(0.7)),
        dtype="float32", steps=4)
    out["groups_adam"] = run(lambda ps: o.Adam(0.01, parameters=[
        {"params": [ps[0]], "learning_rate": 0.5, "beta1": 0.8, "weight_decay": 0.1},
        {"params": [ps[1]]}], weight_decay=0.01))
    out["groups_adamw_clip"] = run(lambda ps: o.AdamW(0.01, parameters=[
        {"params": [ps[0]], "weight_decay": 0.5, "grad_clip": nn.ClipGradByGlobalNorm(0.1)},
        {"params": [ps[1]], "learning_rate": 2.0, "epsilon": 0.01}]))
    out["groups_momentum"] = run(lambda ps: o.Momentum(0.1, 0.9, parameters=[
        {"params": [ps[0]], "weight_decay": 0.1, "momentum": 0.5},
        {"params": [ps[1]], "learning_rate": 0.1}]))

    # a ParamAttr regularizer (L2Decay(0.3)) on the weight: it wins over weight_decay (Adam,
    # Momentum); in AdamW it is an L2 term on the gradient besides the decoupled decay
    out["adam_param_reg"] = run(lambda ps: o.Adam(0.01, parameters=ps, weight_decay=0.01),
                                w_reg=0.3)
    out["momentum_param_reg"] = run(lambda ps: o.Momentum(0.1, parameters=ps,
                                                          weight_decay=0.01), w_reg=0.3)
    out["adamw_param_reg"] = run(lambda ps: o.AdamW(0.05, parameters=ps, weight_decay=0.1),
                                 w_reg=0.3)

    def with_sched(make_sched, make_opt, steps=5):
        holder = {}

        def mk(ps):
            holder["s"] = make_sched()
            return make_opt(holder["s"], ps)
        return run(mk, steps=steps, sched=_Lazy(holder))
    out["adamw_warmup_cosine"] = with_sched(
        lambda: o.lr.LinearWarmup(o.lr.CosineAnnealingDecay(0.1, T_max=4), 2, 0.0, 0.1),
        lambda s, ps: o.AdamW(s, parameters=ps), steps=6)
    out["sgd_step_decay"] = with_sched(lambda: o.lr.StepDecay(0.5, step_size=2, gamma=0.5),
                                       lambda s, ps: o.SGD(s, parameters=ps), steps=5)
    return out


class _Lazy:
    def __init__(self, holder):
        self.holder = holder

    def step(self):
        self.holder["s"].step()


def schedulers():
    lr = paddle.optimizer.lr
    mk = scheduler_makers(lr)
    out = {}
    for key, make in mk.items():
        s = make()
        seq = [s()]
        last = [s.last_epoch]
        for _ in range(14):
            s.step()
            seq.append(s())
            last.append(s.last_epoch)
        s2 = make()
        epochs = [7, 2, 11, 0, 3]
        closed = []
        for e in epochs:
            s2.step(e)
            closed.append(s2())
        out[key] = {"seq": seq, "last_epoch": last, "epochs": epochs, "closed": closed,
                    "state_dict": _plain(s.state_dict())}
    return out


def _plain(d):
    return {k: (_plain(v) if isinstance(v, dict) else v) for k, v in d.items()}


def main():
    HERE.mkdir(exist_ok=True)
    (HERE / "paddle_signatures.json").write_text(json.dumps(signatures(), indent=1) + "\n")
    gold = {"version": paddle.__version__, "optim": cases(), "lr": schedulers()}
    (HERE / "paddle_golden.json").write_text(json.dumps(gold) + "\n")


if __name__ == "__main__":
    main()
