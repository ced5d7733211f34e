"""A tiny randomly initialised Llama with a byte-level BPE tokenizer trained here: no download."""

from __future__ import annotations

from pathlib import Path
from typing import Any

TEXT = [
    "Question: What is the capital of France?\nAnswer: Paris is the capital of France.",
    "The sea is wide and the waves are high. Write a short poem about the sea.",
    "中国的首都是北京。上海是中国最大的城市。",
    "Search results: [1] The lighthouse was built in 1847 by Ada Pemberton.",
] * 20
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def build_tiny_model(root: Path, *, seed: int = 0) -> Path:
    """Write a tokenizer and a 2-layer Llama with random weights to ``root``; returns ``root``."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tf: Any = transformers  # partial stubs

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    tok.train_from_iterator(TEXT, trainer)
    fast = tf.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", bos_token="<|endoftext|>",
                                   additional_special_tokens=SPECIAL[1:])  # fmt: skip
    fast.chat_template = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    fast.save_pretrained(root)
    config = tf.LlamaConfig(vocab_size=len(fast), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         eos_token_id=fast.convert_tokens_to_ids("<|im_end|>"),
                         bos_token_id=fast.convert_tokens_to_ids("<|endoftext|>"), initializer_range=0.5)  # fmt: skip
    torch.manual_seed(seed)
    tf.LlamaForCausalLM(config).save_pretrained(root)
    return root
