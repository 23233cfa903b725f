/*
 * One token through a whole AarenEncoder in a single call: the fused inference step.
 *
 * At batch size 1 a step of the encoder is a few dozen tiny tensor operations, and PyTorch's
 * per-operation overhead, not arithmetic, sets its cost. This file does the same arithmetic in one
 * C function: for every layer
 *
 *     h = LayerNorm1(x);  [s, v] = h W_sv + b_sv                 (scores per head, values)
 *     m' = logaddexp(m, s);  alpha = exp(s - m');  a' = a + alpha (v - a);  c' = max(c, alpha)
 *     x = x + a' W_out + b_out
 *     x = x + GELU(LayerNorm2(x) W_1 + b_1) W_2 + b_2
 *
 * then the final LayerNorm. Weights are float32 and stored input-major ("in x out", the transpose of
 * torch.nn.Linear's weight) so every product is a sequence of contiguous axpy updates that compilers
 * vectorise without reassociating sums. The Aaren state (m, c, a) is float64, as in the Python path.
 * The inputs are never written: the new state goes to separate buffers (states are values).
 *
 * It repeats, for speed, what the PyTorch code defines once (aaren_ts.nn.functional.aaren_step for the
 * update, aaren_ts.nn.blocks.pre_norm_residual for the block); tests/nn/test_fused_step.py checks it
 * against that general path on random weights and states.
 *
 * Built at install time (setup.py: an optional extension) and loaded through ctypes by
 * aaren_ts/nn/_native.py.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define AAREN_FUSED_STEP_ABI 4 /* 4: the encoder step alone (the calibration step is its own library) */

typedef struct {
    const float *ln1_w, *ln1_b;
    const float *w_sv, *b_sv;   /* (d, H + d), (H + d) */
    const float *w_out, *b_out; /* (d, d), (d) */
    const float *ln2_w, *ln2_b;
    const float *w_1, *b_1; /* (d, f), (f) */
    const float *w_2, *b_2; /* (f, d), (d) */
    double ln1_eps, ln2_eps;
} aaren_layer;

int aaren_fused_step_abi(void) { return AAREN_FUSED_STEP_ABI; }

/* y = x W + b for one row; W is (n_in, n_out) row-major. */
static void affine(const float *x, const float *w, const float *b, float *y, int n_in, int n_out) {
    memcpy(y, b, (size_t)n_out * sizeof(float));
    for (int i = 0; i < n_in; ++i) {
        const float xi = x[i];
        const float *wi = w + (size_t)i * n_out;
        for (int j = 0; j < n_out; ++j) y[j] += xi * wi[j];
    }
}

/* y = x + (u W + b) for one row, written into x. */
static void affine_residual(const float *u, const float *w, const float *b, float *x, float *tmp, int n_in,
                            int n_out) {
    affine(u, w, b, tmp, n_in, n_out);
    for (int j = 0; j < n_out; ++j) x[j] += tmp[j];
}

static void layer_norm(const float *x, const float *w, const float *b, double eps, float *y, int d) {
    double mean = 0.0, var = 0.0;
    for (int j = 0; j < d; ++j) mean += x[j];
    mean /= d;
    for (int j = 0; j < d; ++j) {
        const double t = x[j] - mean;
        var += t * t;
    }
    const double inv = 1.0 / sqrt(var / d + eps);
    for (int j = 0; j < d; ++j) y[j] = (float)((x[j] - mean) * inv) * w[j] + b[j];
}

static float gelu(float u) { return 0.5f * u * (1.0f + erff(u * 0.70710678118654752f)); }

/*
 * x:       (batch, d) float32 input tokens          y: (batch, d) float32 output
 * m_in[l], c_in[l]: (batch, H) float64; a_in[l]: (batch, H, d/H) float64 (state before the token)
 * m_out, c_out, a_out: the same shapes, the state after it (must not alias the inputs)
 * Returns 0, or -1 if scratch memory could not be allocated (nothing is written then).
 */
int aaren_encoder_step(int n_layers, const aaren_layer *layers, const float *final_w, const float *final_b,
                       double final_eps, int batch, int d, int n_heads, int d_ff, const float *x, float *y,
                       const double *const *m_in, const double *const *c_in, const double *const *a_in,
                       double *const *m_out, double *const *c_out, double *const *a_out) {
    const int hd = d / n_heads;
    const int n_sv = n_heads + d;
    const int width = d > d_ff ? d : d_ff;
    float *work = (float *)malloc(sizeof(float) * (size_t)(2 * d + n_sv + 2 * width));
    if (work == NULL) return -1;
    float *h = work, *row = work + d, *sv = row + d, *u = sv + n_sv, *tmp = u + width;
    for (int r = 0; r < batch; ++r) {
        memcpy(row, x + (size_t)r * d, (size_t)d * sizeof(float));
        for (int l = 0; l < n_layers; ++l) {
            const aaren_layer *L = layers + l;
            layer_norm(row, L->ln1_w, L->ln1_b, L->ln1_eps, h, d);
            affine(h, L->w_sv, L->b_sv, sv, d, n_sv);
            const size_t sh = (size_t)r * n_heads;
            for (int k = 0; k < n_heads; ++k) {
                const double s = sv[k], m = m_in[l][sh + k];
                /* logaddexp(m, s) with m = -inf before the first token; s is finite */
                const double m_new = isinf(m) && m < 0 ? s : fmax(m, s) + log1p(exp(-fabs(m - s)));
                const double alpha = exp(s - m_new);
                const double c = c_in[l][sh + k];
                m_out[l][sh + k] = m_new;
                c_out[l][sh + k] = c > alpha ? c : alpha;
                const double *a0 = a_in[l] + (sh + k) * hd;
                double *a1 = a_out[l] + (sh + k) * hd;
                const float *v = sv + n_heads + (size_t)k * hd;
                for (int j = 0; j < hd; ++j) {
                    a1[j] = a0[j] + alpha * ((double)v[j] - a0[j]);
                    h[k * hd + j] = (float)a1[j]; /* the attention output, reusing h */
                }
            }
            affine_residual(h, L->w_out, L->b_out, row, tmp, d, d);
            layer_norm(row, L->ln2_w, L->ln2_b, L->ln2_eps, h, d);
            affine(h, L->w_1, L->b_1, u, d, d_ff);
            for (int j = 0; j < d_ff; ++j) u[j] = gelu(u[j]);
            affine_residual(u, L->w_2, L->b_2, row, tmp, d_ff, d);
        }
        layer_norm(row, final_w, final_b, final_eps, y + (size_t)r * d, d);
    }
    free(work);
    return 0;
}
