"""A plain numpy forward pass of the llama-family decoder, written from the papers, to test against."""

import numpy as np


def rope(x, positions, base, d_rot, interleaved):
    """x: (heads, seq, d_head), rotated at integer positions (seq,)."""
    inv = base ** (-np.arange(0, d_rot, 2) / d_rot)
    ang = positions[:, None] * inv[None, :]
    cos, sin = np.cos(ang), np.sin(ang)
    out = x.copy()
    for i in range(d_rot // 2):
        a, b = (2 * i, 2 * i + 1) if interleaved else (i, i + d_rot // 2)
        out[..., a] = x[..., a] * cos[:, i] - x[..., b] * sin[:, i]
        out[..., b] = x[..., a] * sin[:, i] + x[..., b] * cos[:, i]
    return out


def forward(cfg, params, tokens):
    """Logits (seq, vocab) of one sequence of token ids, in float64."""
    p = lambda t: np.asarray(t, dtype=np.float64)  # noqa: E731
    x = p(params["embed"])[tokens]
    seq = len(tokens)
    pos = np.arange(seq, dtype=np.float64)

    def norm(v, w):
        return v / np.sqrt(np.mean(v * v, axis=-1, keepdims=True) + cfg.norm_eps) * p(w)

    for layer in params["layers"]:
        h = norm(x, layer["attn_norm"])
        q = h @ p(layer["wq"]).T + (p(layer["bq"]) if "bq" in layer else 0)
        k = h @ p(layer["wk"]).T + (p(layer["bk"]) if "bk" in layer else 0)
        v = h @ p(layer["wv"]).T + (p(layer["bv"]) if "bv" in layer else 0)
        q = q.reshape(seq, cfg.n_heads, cfg.d_head).transpose(1, 0, 2)
        k = k.reshape(seq, cfg.n_kv_heads, cfg.d_head).transpose(1, 0, 2)
        v = v.reshape(seq, cfg.n_kv_heads, cfg.d_head).transpose(1, 0, 2)
        q = rope(q, pos, cfg.rope_base, cfg.rope_dim, cfg.rope_interleaved)
        k = rope(k, pos, cfg.rope_base, cfg.rope_dim, cfg.rope_interleaved)
        outs = []
        for hd in range(cfg.n_heads):
            kv = hd // (cfg.n_heads // cfg.n_kv_heads)
            s = q[hd] @ k[kv].T / np.sqrt(cfg.d_head)
            s = np.where(np.tril(np.ones((seq, seq), bool)), s, -np.inf)
            w = np.exp(s - s.max(-1, keepdims=True))
            w /= w.sum(-1, keepdims=True)
            outs.append(w @ v[kv])
        att = np.stack(outs, 1).reshape(seq, cfg.n_heads * cfg.d_head)
        x = x + att @ p(layer["wo"]).T
        h = norm(x, layer["ffn_norm"])
        g = h @ p(layer["w_gate"]).T
        x = x + ((g / (1 + np.exp(-g))) * (h @ p(layer["w_up"]).T)) @ p(layer["w_down"]).T
    x = norm(x, params["norm"])
    head = params["embed"] if cfg.tied_embeddings else params["head"]
    return x @ p(head).T
