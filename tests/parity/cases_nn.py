"""Parity cases of include/tessel/nn.h (jax.nn): activations with their derivatives (relu and
relu6 at their kinks too), softmax and its relatives with masks, standardize, one_hot and
dot_product_attention with its masks."""
import jax.numpy as jnp
import numpy as np
from jax import nn

from parity_lib import FLOATS, MATH_TOL, SUM_TOL, rand

# name -> (JAX function, input range)
ACTIVATIONS = {
    "relu": (nn.relu, (-3, 3)), "relu6": (nn.relu6, (-2, 8)), "sigmoid": (nn.sigmoid, (-6, 6)),
    "log_sigmoid": (nn.log_sigmoid, (-30, 30)), "softplus": (nn.softplus, (-30, 30)),
    "sparse_plus": (nn.sparse_plus, (-2, 2)), "sparse_sigmoid": (nn.sparse_sigmoid, (-2, 2)),
    "soft_sign": (nn.soft_sign, (-4, 4)), "silu": (nn.silu, (-6, 6)), "swish": (nn.swish, (-6, 6)),
    "mish": (nn.mish, (-6, 6)), "selu": (nn.selu, (-3, 3)), "hard_tanh": (nn.hard_tanh, (-2, 2)),
    "hard_sigmoid": (nn.hard_sigmoid, (-5, 5)), "hard_silu": (nn.hard_silu, (-5, 5)),
    "hard_swish": (nn.hard_swish, (-5, 5)), "log1mexp": (nn.log1mexp, (0.01, 5)),
    "identity": (nn.identity, (-3, 3)),
}
# Derivatives of softmax-like functions cancel (y * (t - sum(y * t))): their small elements
# carry the rounding of the sums, so they get an absolute tolerance too.
GRAD_TOL = {"float32": (1e-4, 2e-6), "float64": (1e-12, 1e-14)}
# gelu(approximate) computes 1 + tanh(z) with tanh(z) near -1 for x < -2: one ulp of tanh
# becomes a relative error of 1e-4 there; the absolute error stays at ulps of |x|.
CANCEL_TOL = {"float32": (1e-5, 2e-6), "float64": (5e-14, 5e-15)}

# dot_product_attention runs its softmax in float32 whatever the inputs (as JAX does): float64
# attention is as exact as float32's.
ATTENTION_TOL = {"float32": (2e-5, 2e-6), "float64": (2e-5, 2e-6)}
ATTENTION_GRAD_TOL = {"float32": (2e-4, 2e-5), "float64": (2e-4, 2e-5)}

# Points on the kinks, where JAX's custom derivatives choose a side.
KINKS = np.array([-6.0, -3.0, -1.0, 0.0, 1.0, 3.0, 6.0, 7.0])


def cases(s):
    for name, (fn, (lo, hi)) in ACTIVATIONS.items():
        for dtype in FLOATS:
            s.case(f"nn.{name}", fn, [rand((3, 7), dtype, 1, lo, hi)], tol=MATH_TOL, grad=True, gtol=GRAD_TOL)
    for name in ["relu", "relu6", "hard_tanh", "hard_sigmoid", "sparse_plus", "sparse_sigmoid"]:
        s.case(f"nn.{name}", ACTIVATIONS[name][0], [KINKS.astype("float32")], tol=MATH_TOL, grad=True, gtol=GRAD_TOL,
               name=f"nn_{name}_kinks")
    for dtype in FLOATS:
        x = rand((4, 6), dtype, 2, -4, 4)
        for alpha in [1.0, 0.5]:
            s.case("nn.elu", nn.elu, [x], {"alpha": alpha}, tol=MATH_TOL, grad=True, gtol=GRAD_TOL)
            s.case("nn.celu", nn.celu, [x], {"alpha": alpha}, tol=MATH_TOL, grad=True, gtol=GRAD_TOL)
        s.case("nn.leaky_relu", nn.leaky_relu, [x], {"negative_slope": 0.1}, tol=MATH_TOL, grad=True, gtol=GRAD_TOL)
        s.case("nn.squareplus", nn.squareplus, [x], {"b": 2.0}, tol=MATH_TOL, grad=True, gtol=GRAD_TOL)
        for approximate in [True, False]:
            s.case("nn.gelu", nn.gelu, [x], {"approximate": approximate}, tol=CANCEL_TOL, grad=True, gtol=GRAD_TOL)
        for axis in [-1, 0]:
            s.case("nn.glu", nn.glu, [x], {"axis": axis}, tol=MATH_TOL, grad=True, gtol=GRAD_TOL)
        # softmax family: several axes, large logits (stability), a mask
        big = rand((3, 5, 4), dtype, 3, -80, 80)
        for axis in [(-1,), (1,), (0, 2)]:
            s.case("nn.softmax", nn.softmax, [big], {"axis": axis}, tol=MATH_TOL, grad=True, gtol=GRAD_TOL)
            s.case("nn.log_softmax", nn.log_softmax, [big], {"axis": axis}, tol=SUM_TOL, grad=True, gtol=GRAD_TOL)
            for keepdims in [False, True]:
                s.case("nn.logsumexp", nn.logsumexp, [big], {"axis": axis, "keepdims": keepdims}, tol=SUM_TOL,
                       grad=True, gtol=GRAD_TOL)
            s.case("nn.logmeanexp", nn.logmeanexp, [big], {"axis": axis}, tol=SUM_TOL, grad=True, gtol=GRAD_TOL)
        s.case("nn.logsumexp", nn.logsumexp, [big], {"axis": None}, tol=SUM_TOL, grad=True, gtol=GRAD_TOL,
               name=f"nn_logsumexp_all_{dtype}")
        mask = rand((3, 5, 4), "float32", 4, 0, 1) > 0.3
        s.case("nn.softmax", lambda a, m, axis: nn.softmax(a, axis, where=m), [big, mask], {"axis": (-1,)},
               tol=MATH_TOL, grad=True, gtol=GRAD_TOL, name=f"nn_softmax_where_{dtype}")
        s.case("nn.log_softmax", lambda a, m, axis: nn.log_softmax(a, axis, where=m), [big, mask],
               {"axis": (-1,)}, tol=SUM_TOL, grad=True, gtol=GRAD_TOL, name=f"nn_log_softmax_where_{dtype}")
        b = rand((3, 5, 4), dtype, 5, -1, 2)
        s.case("nn.logsumexp", lambda a, b, axis: nn.logsumexp(a, axis, b=b), [big, b], {"axis": (-1,)},
               tol=SUM_TOL, grad=False, name=f"nn_logsumexp_b_{dtype}")
        s.case("nn.logsumexp_with_sign", lambda a, b, axis: nn.logsumexp(a, axis, b=b, return_sign=True),
               [big, b], {"axis": (-1,)}, tol=SUM_TOL, grad=False)
        y = rand((4, 16), dtype, 6, -3, 5)
        for algorithm in ["fast", "stable"]:
            for axis in [(-1,), (0, 1)]:
                s.case("nn.standardize", nn.standardize, [y], {"axis": axis, "algorithm": algorithm},
                       tol=SUM_TOL, grad=True, gtol=GRAD_TOL)
    labels = np.array([[0, 3, 1], [2, 4, -1]], dtype=np.int32)
    for axis in [-1, 0, 1]:
        for dtype in ["float32", "int32", "bool"]:
            s.case("nn.one_hot", lambda x, num_classes, dtype, axis: nn.one_hot(x, num_classes, dtype=dtype,
                                                                                   axis=axis),
                   [labels], {"num_classes": 4, "dtype": dtype, "axis": axis})
    # dot_product_attention: (B, T, N, H) queries, (B, S, K, H) keys/values, grouped heads
    for dtype in FLOATS:
        q = rand((2, 5, 4, 8), dtype, 7)
        k = rand((2, 6, 2, 8), dtype, 8)
        v = rand((2, 6, 2, 8), dtype, 9)
        s.case("nn.dot_product_attention", nn.dot_product_attention, [q, k, v], tol=ATTENTION_TOL, grad=True, gtol=ATTENTION_GRAD_TOL)
        s.case("nn.dot_product_attention", lambda q, k, v, is_causal: nn.dot_product_attention(
            q, k, v, is_causal=is_causal), [q, k, v], {"is_causal": True}, tol=ATTENTION_TOL, grad=True, gtol=ATTENTION_GRAD_TOL)
        bias = rand((2, 1, 5, 6), dtype, 10)
        mask = rand((2, 4, 5, 6), "float32", 11, 0, 1) > 0.25
        s.case("nn.dot_product_attention", lambda q, k, v, b, m, scale: nn.dot_product_attention(
            q, k, v, bias=b, mask=m, scale=scale), [q, k, v, bias, mask], {"scale": 0.5}, tol=ATTENTION_TOL,
               grad=True, gtol=ATTENTION_GRAD_TOL, name=f"nn_dot_product_attention_bias_mask_{dtype}")
        qlen = np.array([3, 5], dtype=np.int32)
        kvlen = np.array([6, 2], dtype=np.int32)
        s.case("nn.dot_product_attention", lambda q, k, v, ql, kl, window: nn.dot_product_attention(
            q, k, v, query_seq_lengths=ql, key_value_seq_lengths=kl, local_window_size=window),
               [q, k, v, qlen, kvlen], {"window": (2, 1)}, tol=ATTENTION_TOL, grad=True, gtol=ATTENTION_GRAD_TOL,
               name=f"nn_dot_product_attention_lengths_{dtype}")
        s.case("nn.dot_product_attention", nn.dot_product_attention,
               [rand((5, 4, 8), dtype, 12), rand((6, 4, 8), dtype, 13), rand((6, 4, 8), dtype, 14)], tol=ATTENTION_TOL,
               name=f"nn_dot_product_attention_3d_{dtype}")
