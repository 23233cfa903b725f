"""Neural-network building blocks: Aaren attention, encoders and the Transformer baseline."""

from aaren_ts.nn import functional
from aaren_ts.nn._native import FusedStepFallbackWarning, fused_step_available
from aaren_ts.nn.aaren import Aaren
from aaren_ts.nn.config import EncoderConfig
from aaren_ts.nn.encoder import AarenEncoder
from aaren_ts.nn.factory import BACKBONES, make_encoder
from aaren_ts.nn.functional import AarenState
from aaren_ts.nn.transformer import CausalSelfAttention, CausalTransformerEncoder, KVCache

__all__ = [
    "BACKBONES",
    "Aaren",
    "AarenEncoder",
    "AarenState",
    "CausalSelfAttention",
    "CausalTransformerEncoder",
    "EncoderConfig",
    "FusedStepFallbackWarning",
    "KVCache",
    "functional",
    "fused_step_available",
    "make_encoder",
]
