"""Cross-encoder recipes outside the product's options, tried on the validation split (or a fold).

A compact copy of the cross-encoder's training loop (lower ``--frozen`` layers run once per pair, the
upper layers trained, both text orders) with switches the product does not expose: the pooling
(``--pool mean|cls``), a second head trained on the binary same-story target beside the graded one
(``--loss bce+bin``), MSE instead of soft BCE (``--loss mse``). Each epoch prints the validation Spearman,
average precision and best F1 of every head; the last epoch's scores are saved to
``benchmarks/results/cache/explore/``. Figures: docs/finetuning.md. The test split is never read.

    python benchmarks/explore_cross_encoder.py --frozen 4 --bf16 --epochs 3 [--pool cls] [--loss bce+bin]
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr
from sklearn.metrics import average_precision_score

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from nlsim.encoders.encoder import mean_pool  # noqa: E402 - after the repository is on the path
from nlsim.rerank.cross_encoder import CrossEncoder  # noqa: E402
from nlsim.training.data import convert_pairs  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--frozen", type=int, default=8)
p.add_argument("--bf16", action="store_true")
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--lr", type=float, default=1e-4)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--pool", default="mean")
p.add_argument("--loss", default="bce")  # bce | bce+bin | mse
p.add_argument("--story-weight", type=float, default=3.0)
p.add_argument("--bin-weight", type=float, default=1.0)
p.add_argument("--seed", type=int, default=42)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--tag", default="")
p.add_argument("--fold", default="val")  # 'val' or 'k/K' CV over train+val
p.add_argument("--decay", default="linear")
args = p.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(args.seed)
np.random.seed(args.seed)
pairs = convert_pairs(
    pd.read_csv(os.path.join(ROOT, "annotations", "thucnews_tw_pairs.tsv"), sep="\t"), "tw2sp"
)
if args.fold == "val":
    tr = pairs[pairs.split == "train"].reset_index(drop=True)
    va = pairs[pairs.split == "validation"].reset_index(drop=True)
else:
    k, K = map(int, args.fold.split("/"))
    tv = pairs[pairs.split != "test"].reset_index(drop=True)
    folds = np.random.default_rng(0).permutation(len(tv)) % K
    tr = tv[folds != k].reset_index(drop=True)
    va = tv[folds == k].reset_index(drop=True)
ce = CrossEncoder.from_base("multilingual-e5-small", 128, args.threads)
model = ce.model
tok = ce.tokenizer
F = args.frozen


def seqs(df):
    a = df.text_a.tolist() + df.text_b.tolist()
    b = df.text_b.tolist() + df.text_a.tolist()
    return tok(a, b, truncation=True, max_length=128)["input_ids"]


def lower(ids_list):
    """hidden state after F frozen layers for each sequence (unpadded, bf16 storage)"""
    out = [None] * len(ids_list)
    L = np.array([len(x) for x in ids_list])
    order = np.argsort(L)
    model.eval()
    with torch.inference_mode():
        for s in range(0, len(order), 128):
            rows = order[s : s + 128]
            w = L[rows].max()
            ids = torch.full((len(rows), w), tok.pad_token_id)
            m = torch.zeros((len(rows), w), dtype=torch.long)
            for j, r in enumerate(rows):
                ids[j, : L[r]] = torch.tensor(ids_list[r])
                m[j, : L[r]] = 1
            h = model.embeddings(input_ids=ids)
            m4 = model._create_attention_masks(
                attention_mask=m,
                encoder_attention_mask=None,
                embedding_output=h,
                encoder_hidden_states=None,
                past_key_values=None,
            )[0]
            for layer in model.encoder.layer[:F]:
                h = layer(h, attention_mask=m4)
            for j, r in enumerate(rows):
                out[r] = h[j, : L[r]].clone()
    return out, L


def batch_of(H, L, rows):
    w = L[rows].max()
    x = torch.zeros((len(rows), w, H[rows[0]].shape[-1]))
    m = torch.zeros((len(rows), w), dtype=torch.long)
    for j, r in enumerate(rows):
        x[j, : L[r]] = H[r]
        m[j, : L[r]] = 1
    return x, m


heads = 2 if "bin" in args.loss else 1
head = torch.nn.Linear(384, heads)


def upper(x, m):
    m4 = model._create_attention_masks(
        attention_mask=m,
        encoder_attention_mask=None,
        embedding_output=x,
        encoder_hidden_states=None,
        past_key_values=None,
    )[0]
    for layer in model.encoder.layer[F:]:
        x = layer(x, attention_mask=m4)
    pooled = mean_pool(x.float(), m) if args.pool == "mean" else x[:, 0].float()
    return head(pooled)


t0 = time.perf_counter()
Htr, Ltr = lower(seqs(tr))
Hva, Lva = lower(seqs(va))
t_cache = time.perf_counter() - t0
y = torch.tensor(np.concatenate([tr.score.values] * 2), dtype=torch.float32)
story = (y >= 0.875).float()
wts = torch.where(story > 0, args.story_weight, 1.0)
for p_ in model.parameters():
    p_.requires_grad_(False)
for layer in model.encoder.layer[F:]:
    for p_ in layer.parameters():
        p_.requires_grad_(True)
params = [p_ for p_ in model.parameters() if p_.requires_grad] + list(head.parameters())
opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01, fused=True)
n = len(Ltr)
steps_per = math.ceil(n / args.bs)
total = steps_per * args.epochs
warm = int(0.1 * total)
sched = torch.optim.lr_scheduler.LambdaLR(
    opt, lambda s: (s + 1) / warm if s < warm else max(0.0, (total - s) / max(1, total - warm))
)
gen = np.random.default_rng(args.seed)


def predict(H, L):
    model.eval()
    outs = np.zeros((len(L), heads))
    order = np.argsort(L)
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
        for s in range(0, len(order), 128):
            rows = order[s : s + 128]
            x, m = batch_of(H, L, rows)
            outs[rows] = upper(x.to(torch.bfloat16) if args.bf16 else x.float(), m).float().numpy()
    nn = len(L) // 2
    return (outs[:nn] + outs[nn:]) / 2  # mean logit over orders


gold = va.score.values
pos = gold >= 0.875


def best_f1(s):
    o = np.argsort(-s)
    g = pos[o]
    tp = np.cumsum(g)
    fp = np.cumsum(~g)
    P = tp / (tp + fp)
    R = tp / pos.sum()
    f = 2 * P * R / np.maximum(P + R, 1e-9)
    i = f.argmax()
    return f[i], P[i], R[i]


hist = []
for ep in range(args.epochs):
    model.train()
    te = time.perf_counter()
    # length-bucketed batches: sort by length+noise, chunk, shuffle chunks
    keys = Ltr + gen.uniform(0, 3, n)
    order = np.argsort(keys)
    batches = [order[s : s + args.bs] for s in range(0, n, args.bs)]
    gen.shuffle(batches)
    losses = []
    for rows in batches:
        x, m = batch_of(Htr, Ltr, rows)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            out = upper(x.to(torch.bfloat16) if args.bf16 else x.float(), m).float()
        r = torch.as_tensor(rows)
        if args.loss == "mse":
            per = (torch.sigmoid(out[:, 0]) - y[r]) ** 2
        else:
            per = torch.nn.functional.binary_cross_entropy_with_logits(out[:, 0], y[r], reduction="none")
        loss = (per * wts[r]).sum() / wts[r].sum()
        if heads == 2:
            loss = loss + args.bin_weight * torch.nn.functional.binary_cross_entropy_with_logits(
                out[:, 1], story[r]
            )
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
    tt = time.perf_counter() - te
    pr = predict(Hva, Lva)
    row = {"epoch": ep + 1, "loss": round(np.mean(losses), 4), "sec": round(tt, 1)}
    for h in range(heads):
        s = pr[:, h]
        f, P, R = best_f1(s)
        row[f"h{h}"] = {
            "spearman": round(spearmanr(s, gold).statistic * 100, 2),
            "ap": round(average_precision_score(pos, s), 3),
            "f1": round(f, 3),
            "P": round(P, 2),
            "R": round(R, 2),
        }
    hist.append(row)
    print(json.dumps(row), flush=True)
OUT = os.path.join(ROOT, "benchmarks", "results", "cache", "explore")
os.makedirs(OUT, exist_ok=True)
name = f"{args.tag}F{F}{'b' if args.bf16 else ''}_e{args.epochs}_lr{args.lr}_{args.pool}_{args.loss}"
name += f"_sw{args.story_weight}_s{args.seed}_{args.fold.replace('/', 'of')}"
np.save(os.path.join(OUT, f"{name}.npy"), pr)
print("cache s", round(t_cache, 1), name)
