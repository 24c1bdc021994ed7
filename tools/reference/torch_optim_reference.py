#!/usr/bin/python3
"""Prints the reference values that tests/optim/*_test.cpp compare against.

Runs torch's own optimizers and LR schedulers (Debian's python3-torch:
tools/install-deps.sh --peers) on a small fixed problem, so that dtrain's
update rules are checked against an independent implementation, not
against themselves. Re-run and paste when a test's setup changes.
"""
import torch

torch.set_printoptions(precision=9)
p0 = [0.5, -1.25, 2.0, 0.0, -0.75]
grads = [[0.1, -0.2, 0.3, -0.4, 0.5],
         [-0.3, 0.25, 0.05, 0.6, -0.1],
         [0.2, 0.2, -0.5, 0.1, 0.0]]


def run(make):
    p = torch.tensor(p0, requires_grad=True)
    opt = make([p])
    for g in grads:
        p.grad = torch.tensor(g)
        opt.step()
    return [f"{v:.9g}f" for v in p.detach().tolist()]


cases = {
    "sgd_plain": lambda ps: torch.optim.SGD(ps, lr=0.1),
    "sgd_momentum_dampening_wd": lambda ps: torch.optim.SGD(
        ps, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01),
    "sgd_nesterov_wd": lambda ps: torch.optim.SGD(
        ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.05),
    "adam_wd": lambda ps: torch.optim.Adam(ps, lr=0.01, weight_decay=0.1),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1),
}
for name, make in cases.items():
    print(f"{name}: {{{', '.join(run(make))}}}")


def lrs(make, n=10, base=0.1):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=base)
    sched = make(opt)
    out = []
    for _ in range(n):
        out.append(f"{opt.param_groups[0]['lr']:.9g}f")
        opt.step()
        sched.step()
    return out


S = torch.optim.lr_scheduler
print("step_lr(3, 0.5):", ", ".join(lrs(lambda o: S.StepLR(o, 3, 0.5))))
print("multistep([3, 6], 0.1):", ", ".join(lrs(lambda o: S.MultiStepLR(o, [3, 6], 0.1))))
print("cosine(8, 0.001):", ", ".join(lrs(lambda o: S.CosineAnnealingLR(o, 8, 0.001))))
print("linear(0.25, 4):", ", ".join(lrs(lambda o: S.LinearLR(o, 0.25, 1.0, 4))))
