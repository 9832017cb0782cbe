"""tenplex.describe and partition rules (TENPLEX_ADDR for the part that stores a spec with a save).

* the example's TransformerEncoder classifier: every parameter, the buffer, the tied copy and Adam's
  moments described with the rules' partitions and the right stages; its functional tensor-parallel
  forward at (1,1,1) equals the nn.Module's own forward;
* moments from an optimizer that has stepped, and by class before any step;
* DTensor / ShardedTensor layouts read from the tensor itself (duck-typed stand-ins: Debian's torch
  1.13 has no DTensor and its ShardedTensor does not import under Python 3.11);
* refusals that name the tensor and what does not fit: no rule, a row split of a vector, a tied copy
  cut differently, a stage that cannot be told, a configuration that cannot split a tensor or the
  layers, an unknown optimizer, bad rules, a sharded tensor that disagrees with its rule;
* ``tenplex.save(..., spec=...)`` stores the spec with the job.
Prints OK at the end; any failure raises."""

import json
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))

import torch  # noqa: E402

import elastic_encoder as ex  # noqa: E402
import tenplex  # noqa: E402
from tenplex import DescriptionError  # noqa: E402

A = ex.parse_args(["--until", "1"])


def refused(fn, *needles):
    try:
        fn()
    except DescriptionError as e:
        for n in needles:
            assert n in str(e), "%r not in %r" % (n, str(e))
        return str(e)
    raise AssertionError("not refused: %s" % (needles,))


# ---- the example's model
model = ex.Classifier(A)
spec = tenplex.describe(model, ex.RULES, torch.optim.Adam)
t = {x["name"]: x for x in spec["tensors"]}
assert spec["layers"] == 4
assert t["pos"] == {"name": "pos", "dtype": "f64", "shape": [12, 32], "partition": {"kind": "replicated"},
                    "stage": "first"}, t["pos"]
assert t["embed.weight"]["partition"] == {"kind": "vocab", "dim": 0, "divisibleBy": 8}
assert t["lm_head.weight"]["stage"] == "last" and t["head.bias"]["stage"] == "last"
assert t["encoder.layers.2.linear2.weight"] == {"name": "encoder.layers.2.linear2.weight", "dtype": "f64",
                                                "shape": [32, 64], "partition": {"kind": "split", "dim": 1},
                                                "layer": 2}
assert t["encoder.layers.0.linear1.bias"]["partition"] == {"kind": "split", "dim": 0}
assert t["encoder.layers.0.self_attn.in_proj_weight"]["partition"] == {"kind": "replicated"}
assert t["optimizer.exp_avg_sq.encoder.layers.1.self_attn.out_proj.weight"]["partition"]["dim"] == 1
assert "optimizer.exp_avg.pos" not in t, "a buffer has no moments"
assert spec["ties"] == {"lm_head.weight": "embed.weight", "optimizer.exp_avg.lm_head.weight":
                        "optimizer.exp_avg.embed.weight", "optimizer.exp_avg_sq.lm_head.weight":
                        "optimizer.exp_avg_sq.embed.weight"}, spec["ties"]
assert spec["values"] == [{"key": "optimizer.step", "scope": "global"},
                          {"key": "optimizer.param_groups", "scope": "global"}], spec["values"]
assert len(spec["tensors"]) == 3 * (len(model.state_dict()) - 1) + 1
tenplex.check_spec(spec, (4, 1, 1))
tenplex.check_spec(spec, {"tp": 2, "pp": 2, "dp": 1})

# ---- the example's functional forward at (1,1,1) is the module's forward
c = dict(T=1, P=1, D=1, tp=0, dp=0, pp=0, tp_group=None, dp_group=None, tie_group=None)
stage = ex.Stage(A, model, spec, c)
assert stage.named["lm_head.weight"] is stage.named["embed.weight"], "P=1: the tied weight is one parameter"
tokens, labels = ex.data(A)
x = tokens[:3]
with torch.no_grad():
    mine = stage.forward(None, x)
    h = model.embed(x) + model.pos
    for layer in model.encoder.layers:  # the layer's own forward (not the fused eval path)
        layer.train()
        h = layer(h)
assert torch.allclose(mine, h, rtol=0, atol=1e-12), float((mine - h).abs().max())

# ---- moments from an optimizer's state after a step, and SGD without momentum has none
lin = torch.nn.Linear(4, 6).double()
opt = torch.optim.Adam(lin.parameters(), amsgrad=True)
lin(torch.ones(2, 4, dtype=torch.float64)).sum().backward()
opt.step()
rules = {"rules": [{"match": "weight", "partition": "column"}, {"match": "bias", "partition": "column"}]}
s = tenplex.describe(lin, rules, opt)
assert sorted(x["name"] for x in s["tensors"]) == sorted(
    ["weight", "bias"] + ["optimizer.%s.%s" % (k, n) for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")
                          for n in ("weight", "bias")]), s["tensors"]
assert s["values"][0] == {"key": "optimizer.step", "scope": "global"}
assert len(tenplex.describe(lin, rules, torch.optim.SGD(lin.parameters(), lr=0.1))["tensors"]) == 2


# ---- DTensor and ShardedTensor: the layout comes from the tensor itself
class Shard:
    def __init__(self, dim):
        self.dim = dim


class Replicate:
    pass


class Mesh:
    def size(self, i):
        return 2


def dtensor(shape, placement):
    t = torch.zeros(shape, dtype=torch.float32)
    return types.SimpleNamespace(shape=torch.Size(shape), dtype=t.dtype, placements=[placement], device_mesh=Mesh())


def sharded(shape, parts):
    md = types.SimpleNamespace(size=torch.Size(shape), shards_metadata=[
        types.SimpleNamespace(shard_offsets=o, shard_sizes=s) for o, s in parts])
    return types.SimpleNamespace(shape=torch.Size(shape), dtype=torch.float32, metadata=lambda: md,
                                 local_shards=lambda: [])


class Fake:
    def __init__(self, sd):
        self.sd = sd

    def state_dict(self, keep_vars=False):
        return dict(self.sd)

    def named_parameters(self):
        return iter(())


d = tenplex.describe(Fake({"w": dtensor((8, 4), Shard(1)), "b": dtensor((8,), Replicate()),
                           "e": sharded((10, 4), [((0, 0), (5, 4)), ((5, 0), (5, 4))])}))
assert [(x["name"], x["shape"], x["partition"]) for x in d["tensors"]] == [
    ("w", [8, 4], {"kind": "split", "dim": 1}), ("b", [8], {"kind": "replicated"}),
    ("e", [10, 4], {"kind": "split", "dim": 0})], d["tensors"]
refused(lambda: tenplex.describe(Fake({"w": dtensor((8, 4), Shard(1))}), {"rules": [{"match": "w",
        "partition": "column"}]}), "w: rule 'w'", "the tensor itself is {'kind': 'split', 'dim': 1}")
refused(lambda: tenplex.describe(Fake({"e": sharded((10, 4), [((0, 0), (4, 4)), ((4, 0), (6, 4))])})),
        "e: ShardedTensor shard 0 is [0, 4) of dim 0", "2 equal consecutive parts of 5")

# ---- refusals name the tensor, the configuration and what does not fit
refused(lambda: tenplex.describe(model, ["transformer"]), "pos [12, 32] matches no rule", "(11 rules)",
        'add one, e.g. {"match": "pos", "partition": "replicated"}')
refused(lambda: tenplex.describe(lin, {"rules": [{"match": "*", "partition": "row"}]}),
        "bias: a row split splits dim 1 but the tensor has shape [6]")
refused(lambda: tenplex.describe(model, [{"rules": [{"match": "lm_head.weight", "partition": "replicated"}]}]
                                 + ex.RULES), "lm_head.weight is the same tensor as embed.weight",
        "{'kind': 'replicated'}", "'kind': 'vocab'")
between = torch.nn.Module()
between.layers = torch.nn.ModuleList([torch.nn.Linear(2, 2)])
between.mid = torch.nn.Linear(2, 2)
between.tail = torch.nn.Module()
between.tail.layers = torch.nn.ModuleList([torch.nn.Linear(2, 2)])
piped = tenplex.describe(between, {"rules": [{"match": "*", "partition": "replicated"}]})  # two stacks, in module order
assert [t.get("stage", t.get("layer")) for t in piped["tensors"]] == [0, 0, 0, 0, 1, 1] and piped["layers"] == 2, piped
turns = Fake({n: torch.zeros(2) for n in ("a.layers.0.w", "b.layers.0.w", "a.layers.1.w")})
turns_rules = {"rules": [{"match": "*", "partition": "replicated"}]}
refused(lambda: tenplex.describe(turns, turns_rules), "a.layers.1.w comes after b.layers.<n> but a.layers.<n> came "
        "before it", "configs=[(T, P, D), ...]")
assert tenplex.describe(turns, turns_rules, configs=[(1, 1, 2)])["layers"] == 3
unpiped = tenplex.describe(between, {"rules": [{"match": "*", "partition": "replicated"}]}, configs=[(1, 1, 4)])
assert [t.get("stage", t.get("layer")) for t in unpiped["tensors"]][2:4] == ["first", "first"], unpiped  # mid
refused(lambda: tenplex.describe(model, ex.RULES, torch.optim.Adam, configs=[(3, 1, 1)]),
        "encoder.layers.0.self_attn.out_proj.weight: dim 1 of size 32 cannot be split into T=3 equal parts",
        "under (T,P,D)=(3, 1, 1)")
refused(lambda: tenplex.check_spec(spec, (1, 3, 1)), "4 layers cannot be split uniformly over P=3",
        "(T,P,D)=(1, 3, 1)")
refused(lambda: tenplex.describe(lin, rules, torch.optim.LBFGS), "optimizer LBFGS", "describe after one step")
refused(lambda: tenplex.describe(lin, {"rules": [{"match": "*", "partition": "diagonal"}]}),
        "dict #0: partition 'diagonal' is not one of")
refused(lambda: tenplex.describe(lin, {"rules": [{"match": "*", "partition": "column", "granule": "${g}"}]}),
        "granule is ${g}, but no such parameter was given")
assert tenplex.describe(lin, {"rules": [{"match": "*", "partition": "column", "granule": "${g}"}]},
                        params={"g": 3})["tensors"][0]["partition"] == {"kind": "split", "dim": 0, "granule": 3}
refused(lambda: tenplex.describe(lin, {"rules": [{"match": "*", "partition": "column", "granule": 4}]}),
        "weight: dim 0 of size 6 is not made of whole granules of 4")
refused(lambda: tenplex.describe(lin, "no-such-rules"), "no shipped rules of that name (shipped: megatron, transformer)")
experts = torch.nn.Module()
experts.experts = torch.nn.ModuleList([torch.nn.Linear(2, 4, bias=False) for _ in range(2)])
e = tenplex.describe(experts, {"rules": [{"match": "experts.{e}.weight", "partition": "expert", "experts": 2,
                                          "inner": "column"}]})
assert e["tensors"][1]["partition"] == {"kind": "expert", "experts": 2, "expert": 1,
                                        "inner": {"kind": "split", "dim": 0}}, e["tensors"]

# ---- the shipped Megatron rules say what MegatronStructures says
meg = tenplex.rules.compile("megatron", {"qkv_granule": 192})
for name, want in [("language_model.embedding.word_embeddings.weight", ("vocab", "first")),
                   ("word_embeddings_for_head.weight", ("vocab", "last")),
                   ("language_model.encoder.layers.0.self_attention.query_key_value.weight", ("split", None)),
                   ("language_model.encoder.final_layernorm.weight", ("replicated", "last")),
                   ("language_model.pooler.dense.weight", ("replicated", "last")),
                   ("binary_head.weight", ("replicated", "last"))]:
    rule, part = tenplex.rules.first_match(meg, name)
    assert (part["kind"], rule.stage) == want, (name, part, rule)

# ---- rules in the form the daemon reads (save(rules=...)): sources read here, params kept, bad ones refused
form = tenplex.rules.stored_form([{"rules": [{"match": "embed.weight", "partition": "vocab", "size": "${vocab}"}]},
                                  "transformer"], {"vocab": 50})
assert form["params"] == {"vocab": 50} and form["rules"][0]["size"] == "${vocab}", form
assert any(r["match"].endswith("linear1.weight") for r in form["rules"]), form  # the shipped set, read in
for bad, says in [(([{"match": "x", "partition": "diagonal"}], None), "diagonal"),
                  (("nosuchset", None), "no shipped rules"),
                  (([{"match": "x", "partition": "column"}], {"vocab": "50"}), "whole numbers")]:
    try:
        tenplex.rules.stored_form(*bad)
        raise AssertionError("accepted %r" % (bad,))
    except tenplex.rules.DescriptionError as e:
        assert says in str(e), (says, str(e))

# ---- an encoder-decoder (nn.Transformer): no stage is asked for when no configuration has P > 1;
# its two stacks of layers.<n> are numbered in module order (encoder 0..E-1, decoder E..E+D-1), the
# encoder's norm on the stage of the encoder's last layer, so P = 2 cuts between encoder and decoder
tr = torch.nn.Transformer(d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=32)
tr_rules = [{"match": "*coder.norm.*", "partition": "replicated"}, "transformer"]  # rule dicts among sources
ts = tenplex.describe(tr, tr_rules, torch.optim.Adam, configs=[(1, 1, 2), (2, 1, 1)])
assert all(t.get("stage") == "first" or "layer" in t for t in ts["tensors"]), ts["tensors"]
assert {t["name"] for t in ts["tensors"]} >= {"encoder.norm.weight", "decoder.layers.0.multihead_attn.in_proj_weight"}
tr2 = torch.nn.Transformer(d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=32)
for cfgs in (None, [(1, 1, 2), (1, 2, 1)]):
    piped = tenplex.describe(tr2, tr_rules, torch.optim.Adam, configs=cfgs)
    at = {t["name"]: t.get("layer", t.get("stage")) for t in piped["tensors"]}
    assert piped["layers"] == 4, piped["layers"]
    assert at["encoder.layers.1.linear1.weight"] == 1 and at["encoder.norm.weight"] == 1, at
    assert at["decoder.layers.0.linear1.weight"] == 2 and at["decoder.layers.1.norm3.bias"] == 3, at
    assert at["decoder.norm.weight"] == "last", at
    assert at["optimizer.exp_avg.decoder.layers.1.linear2.weight"] == 3, at
    tenplex.check_spec(piped, (1, 2, 1))  # 4 layers: encoder on stage 0, decoder on stage 1
pats = [r.pattern for r in tenplex.rules.compile([{"match": "a", "partition": "row"}, "transformer",
                                                  {"match": "b", "partition": "column"}])]
assert pats[0] == "a" and pats[-1] == "b" and pats[1:-1] == [r.pattern for r in tenplex.rules.compile("transformer")]

# ---- the spec is stored with the job by the first save
ADDR = os.environ.get("TENPLEX_ADDR")
if ADDR:
    cl = tenplex.Client(ADDR)
    tenplex.save({"weight": lin.weight.detach(), "bias": lin.bias.detach()}, "pydescribe", 1, 0, 1, client=cl,
                 config={"tp": 1, "pp": 1, "dp": 1, "devicesPerWorker": 1}, spec=s)
    stored = json.loads(tenplex.wire.transfer.read_file(cl, "/job/pydescribe/model.json"))
    assert stored == s, stored
print("OK")
