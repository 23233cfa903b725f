"""Aaren layer, AarenEncoder and the KV-cached Transformer: stepping equals the parallel forward."""

from __future__ import annotations

import pickle

import pytest
import torch

from aaren_ts.nn import Aaren, AarenEncoder, CausalTransformerEncoder, EncoderConfig, KVCache, make_encoder

from .reference import attention_reference, relative_error

ENCODERS = [AarenEncoder, CausalTransformerEncoder]


def _batch(seed: int = 0, batch: int = 3, n: int = 40, d: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, n, d, generator=gen)
    mask = torch.ones(batch, n, dtype=torch.bool)
    mask[1, n - 7 :] = False  # a shorter series, padded at the end
    mask[2, :4] = False  # padding at the start
    return x, mask


def test_aaren_layer_is_attention_with_a_learned_query() -> None:
    torch.manual_seed(0)
    layer = Aaren(d_model=8, n_heads=2).double()
    x = torch.randn(2, 11, 8, dtype=torch.float64)
    y, _ = layer(x)
    # Build the same computation from the definition: q . k / sqrt(d) scores, softmax over the prefix.
    k = layer.key(x).unflatten(-1, (2, 4))
    v = layer.value(x).unflatten(-1, (2, 4))
    s = (k * layer.query).sum(-1) / 2.0  # sqrt(head_dim = 4)
    o = attention_reference(s.transpose(1, 2), v.permute(0, 2, 1, 3)).permute(0, 2, 1, 3).flatten(-2)
    assert relative_error(y, layer.out(o)) < 1e-10


def _assert_steps_equal_forward(enc, x: torch.Tensor, mask: torch.Tensor, tol: float) -> None:
    """Stepping ``enc`` through ``x`` token by token gives its parallel outputs at the real tokens."""
    with torch.no_grad():
        y, _ = enc(x, mask)
        state = enc.init_state(x.shape[0])
        steps = []
        for t in range(x.shape[1]):
            y_t, state = enc.step(x[:, t], state, mask[:, t])
            steps.append(y_t)
    torch.testing.assert_close(torch.stack(steps, 1)[mask], y[mask], rtol=tol, atol=tol)


@pytest.mark.parametrize("cls", ENCODERS)
def test_step_equals_forward(cls: type) -> None:
    torch.manual_seed(0)
    enc = cls(d_model=16, n_heads=4, n_layers=3, d_ff=32).eval()
    x, mask = _batch()
    _assert_steps_equal_forward(enc, x, mask, tol=1e-5)


@pytest.mark.parametrize("cls", ENCODERS)
def test_block_continuation_equals_forward(cls: type) -> None:
    torch.manual_seed(1)
    enc = cls(d_model=16, n_heads=2, n_layers=2, d_ff=32).eval()
    x, mask = _batch(seed=1)
    with torch.no_grad():
        y, _ = enc(x, mask)
        state, parts = None, []
        for lo, hi in [(0, 1), (1, 13), (13, 14), (14, 40)]:
            part, state = enc(x[:, lo:hi], mask[:, lo:hi], state)
            parts.append(part)
    torch.testing.assert_close(torch.cat(parts, 1)[mask], y[mask], rtol=1e-5, atol=1e-5)


def test_padding_does_not_change_real_outputs() -> None:
    torch.manual_seed(2)
    enc = AarenEncoder(d_model=16, n_heads=2, n_layers=2, d_ff=32).eval()
    x = torch.randn(1, 20, 16, generator=torch.Generator().manual_seed(2))
    padded = torch.cat([x, torch.randn(1, 9, 16) * 100], dim=1)
    mask = torch.cat([torch.ones(1, 20, dtype=torch.bool), torch.zeros(1, 9, dtype=torch.bool)], dim=1)
    with torch.no_grad():
        y, _ = enc(x)
        y_pad, _ = enc(padded, mask)
    torch.testing.assert_close(y_pad[:, :20], y, rtol=1e-5, atol=1e-5)


def test_aaren_state_size_is_independent_of_history() -> None:
    enc = AarenEncoder(d_model=16, n_heads=2, n_layers=2, d_ff=32).eval()
    state = enc.init_state(1)

    def nbytes(st: list) -> int:
        return sum(t.nelement() * t.element_size() for layer in st for t in layer)

    before = nbytes(state)
    with torch.no_grad():
        for _ in range(300):
            _, state = enc.step(torch.randn(1, 16), state)
    assert nbytes(state) == before


def test_kv_cache_grows_and_branches_safely() -> None:
    cache = KVCache.empty(1, 1, 2, capacity=2)
    k = torch.arange(6.0).reshape(1, 1, 3, 2)
    grown = cache.append(k, k, torch.ones(1, 3, dtype=torch.bool))
    assert grown.length == 3 and torch.equal(grown.k, k)
    a = grown.append(torch.ones(1, 1, 1, 2), torch.ones(1, 1, 1, 2), torch.ones(1, 1, dtype=torch.bool))
    b = grown.append(torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 1, 2), torch.ones(1, 1, dtype=torch.bool))
    assert torch.equal(a.k[..., -1, :], torch.ones(1, 1, 2))  # b did not overwrite a
    assert torch.equal(b.k[..., -1, :], torch.zeros(1, 1, 2))
    assert torch.equal(a.k[..., :3, :], k) and torch.equal(b.k[..., :3, :], k)


@pytest.mark.parametrize("cls", ENCODERS)
def test_training_step_gives_finite_gradients_everywhere(cls: type) -> None:
    torch.manual_seed(3)
    enc = cls(d_model=16, n_heads=2, n_layers=2, d_ff=32, dropout=0.1)
    x, mask = _batch(seed=3)
    y, _ = enc(x, mask)
    (y[mask] ** 2).mean().backward()
    for name, p in enc.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name


def test_make_encoder_and_errors() -> None:
    sizes = {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16}
    assert isinstance(make_encoder(EncoderConfig("aaren", **sizes)), AarenEncoder)
    assert isinstance(make_encoder(EncoderConfig("transformer", **sizes)), CausalTransformerEncoder)
    with pytest.raises(ValueError, match="unknown backbone 'lstm'"):
        make_encoder(EncoderConfig("lstm", **sizes))
    with pytest.raises(ValueError, match="positive divisor"):
        Aaren(10, 3)
    with pytest.raises(ValueError, match="n_layers"):
        AarenEncoder(8, 2, 0, 16)


@pytest.mark.parametrize("cls", ENCODERS)
def test_public_constructors_and_from_config(cls: type) -> None:
    # The positional constructor is a documented contract; from_config and make_encoder build the same.
    import inspect

    params = list(inspect.signature(cls).parameters.values())
    assert [p.name for p in params] == [
        "d_model",
        "n_heads",
        "n_layers",
        "d_ff",
        "dropout",
        "bias",
        "fast_dropout",
    ]
    assert [p.default for p in params[4:]] == [0.0, True, False]
    config = EncoderConfig(cls.backbone, d_model=8, n_heads=2, n_layers=3, d_ff=16, dropout=0.1, bias=False)
    torch.manual_seed(0)
    positional = cls(8, 2, 3, 16, 0.1, False)
    torch.manual_seed(0)
    built = cls.from_config(config)
    torch.manual_seed(0)
    made = make_encoder(config)
    assert positional.config == built.config == made.config == config
    assert type(made) is cls and len(made.layers) == 3 and made.layers[0].mixer.out.bias is None
    assert made.layers[0].feed_forward.p == 0.1
    for a, b in zip(positional.state_dict().values(), made.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    mixer = Aaren(8, 2, dropout=0.1, bias=False)
    assert mixer.head_dim == 4 and mixer.out.bias is None


def test_lean_step_uses_the_one_recurrence(monkeypatch) -> None:
    # The PyTorch step of the plan runs functional.aaren_step, once per layer and token.
    import aaren_ts.nn.encoder as encoder_module
    from aaren_ts.nn.functional import aaren_step

    calls = []
    monkeypatch.setattr(encoder_module, "aaren_step", lambda *a: calls.append(1) or aaren_step(*a))
    monkeypatch.setattr(encoder_module, "load_fused_step", lambda: None)
    enc = AarenEncoder(d_model=8, n_heads=2, n_layers=3, d_ff=16).eval()
    with torch.inference_mode():
        enc.step(torch.randn(1, 8), enc.init_state(1))
    assert len(calls) == 3


def test_encoder_pickles() -> None:
    enc = AarenEncoder(d_model=8, n_heads=2, n_layers=1, d_ff=16).eval()
    clone = pickle.loads(pickle.dumps(enc))
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(clone(x)[0], enc(x)[0])


@pytest.mark.cuda
@pytest.mark.parametrize("cls", ENCODERS)
def test_cuda_step_equals_forward(cls: type) -> None:
    torch.manual_seed(0)
    enc = cls(d_model=16, n_heads=4, n_layers=2, d_ff=32).eval().cuda()
    x, mask = (t.cuda() for t in _batch())
    _assert_steps_equal_forward(enc, x, mask, tol=1e-4)


def test_lean_inference_step_equals_forward_and_follows_weight_updates() -> None:
    torch.manual_seed(4)
    enc = AarenEncoder(d_model=16, n_heads=4, n_layers=2, d_ff=32).eval()
    x = torch.randn(2, 30, 16)

    def stepped() -> torch.Tensor:
        with torch.inference_mode():  # eval, no grad, no mask: the lean path
            state = enc.init_state(2)
            outs = []
            for t in range(x.shape[1]):
                y_t, state = enc.step(x[:, t], state)
                outs.append(y_t)
        return torch.stack(outs, 1)

    with torch.no_grad():
        expected, _ = enc(x)
    torch.testing.assert_close(stepped(), expected, rtol=1e-5, atol=1e-5)
    # An optimiser-style in-place update must invalidate the cached plan.
    with torch.no_grad():
        for p in enc.parameters():
            p.add_(0.05 * torch.randn_like(p))
        expected_after, _ = enc(x)
    assert not torch.allclose(expected_after, expected, atol=1e-3)
    torch.testing.assert_close(stepped(), expected_after, rtol=1e-5, atol=1e-5)
    # And so must loading other weights.
    other = AarenEncoder(d_model=16, n_heads=4, n_layers=2, d_ff=32).eval()
    enc.load_state_dict(other.state_dict())
    with torch.no_grad():
        expected_other, _ = other(x)
    torch.testing.assert_close(stepped(), expected_other, rtol=1e-5, atol=1e-5)
