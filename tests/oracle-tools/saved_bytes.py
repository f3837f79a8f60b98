# The activations autograd keeps from a Llama layer's forward for its
# backward, in bytes of distinct storages: the reference for the saved
# activations sim/core/sched.c allocates (tests/check_sched.c,
# test_sched_saved_activations_match_pytorch).
#
# Usage: python saved_bytes.py > tests/data/llama-saved-bytes.txt
#
# The layers are dispatch_ops.py's, on the same 2 x 64 bf16 tokens:
# Hugging Face's LlamaDecoderLayer (the 2-layer model's saved storages
# minus the 1-layer model's) with attn_implementation "sdpa" and
# "eager", torchtitan's TransformerBlock and FMS's LLaMABlock (one
# block, its input a leaf requiring grad).  torch.autograd.graph.
# saved_tensors_hooks sees every tensor a backward node saves; a storage
# saved by several nodes (o_proj's input and SDPA's output, q/k/v's
# shared input) counts once, and parameters not at all.
#
# It runs on CPU: SDPA's op is the CPU flash one, which saves what the
# CUDA one does (q, k, v, the output, the fp32 log-sum-exp); the output
# layouts that decide whether o_proj's input is the output itself are
# those of CUDA (doc/compute-model.md, "Memory: what a layer saves for
# backward").
import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM

import dispatch_ops as d


def saved_storages(module, forward):
    """Bytes of the distinct non-parameter storages FORWARD() saves."""
    params = {p.untyped_storage().data_ptr() for p in module.parameters()}
    seen = {}

    def pack(t):
        s = t.untyped_storage()
        if s.data_ptr() not in params:
            seen[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward()
    return sum(seen.values())


def hf_model(layers, impl):
    cfg = LlamaConfig(hidden_size=256, intermediate_size=688,
                      num_attention_heads=4, num_key_value_heads=4,
                      vocab_size=1000, num_hidden_layers=layers,
                      max_position_embeddings=2048, tie_word_embeddings=False,
                      attn_implementation=impl)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(torch.bfloat16).train()
    ids = torch.randint(0, 1000, (2, 64))
    return saved_storages(model, lambda: model(input_ids=ids, labels=ids,
                                               use_cache=False).loss)


def block(module, *args):
    torch.manual_seed(0)
    module = module.to(torch.bfloat16).train()
    x = torch.randn(d.B, d.S, d.D, dtype=torch.bfloat16, requires_grad=True)
    return saved_storages(module, lambda: module(x, *args))


def main():
    print("# bytes autograd saves for one Llama layer's backward (distinct "
          "storages),")
    print("# made by tests/oracle-tools/saved_bytes.py with torch %s, "
          "transformers %s, on CPU"
          % (torch.__version__, transformers.__version__))
    print("# layer bytes")
    for impl in ("sdpa", "eager"):
        print("hf-%s %d" % (impl, hf_model(2, impl) - hf_model(1, impl)))
    print("torchtitan %d" % block(d.TransformerBlock(),
                                  d.precompute_freqs_cis(d.HD, d.S)))
    print("fms %d" % block(d.FmsBlock()))


if __name__ == "__main__":
    main()
