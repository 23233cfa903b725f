/*
 * One step of the online interval calibration (adaptive conformal inference) for many streams.
 *
 * For every stream that advanced by one observation y (channels C), with horizon T and L tracked
 * levels, this does in one pass what aaren_ts/engine/calibration.py describes:
 *
 *     for h in 0..T-1, if the stream had issued more than h forecasts and y[c] is finite:
 *         (mu, sigma) = the forecast of horizon h + 1 issued h steps ago   (ring slot (n - 1 - h) % T)
 *         p = erfc(|y[c] - (mu + known[h, c])| / sigma / sqrt(2))          (two-sided p-value)
 *         for every level a:  a <- a + rate * nominal - rate * [p < a or p < min_level]
 *     then the stream's new forecast (T x C means and scales) goes into ring slot n % T.
 *
 * The ring holds each forecast's mean and standard deviation side by side, (slot, h, c, {mu, sigma}),
 * so the pair an observation judges is one memory read.
 *
 * With many streams the ring does not fit in any cache and the judged forecasts lie on a diagonal
 * of it, one per cache line: PyTorch gathers them with an index_select over an index tensor as large
 * as the data, then makes a handful of passes over the levels. Here each stream's diagonal
 * is requested a few streams ahead (prefetch), read once, and its levels are updated while they are
 * in cache, in loops the compiler vectorises.
 *
 * The arithmetic is the PyTorch path's, in float32 and in the same order, except erfc: the C
 * library's erfcf costs about 20 ns a value and does not vectorise, so erfc_positive below computes
 * it to 1.4e-6 relative or better wherever it can decide anything (p-values above 1e-6). The levels
 * therefore agree with the PyTorch path to rounding (a level can move one rate step differently where
 * a p-value lies within about 1e-6 of it, relatively). On CPU the estimator uses this kernel for
 * every step of every chunk, so chunked and one-at-a-time streaming agree bit for bit;
 * tests/estimators/test_calibration_step.py checks both.
 *
 * Its arguments are checked before anything is written (stream indices within the state, issued
 * counts not negative): a state restored from a file it does not fit is refused, not written out of
 * bounds.
 *
 * Built at install time (setup.py: an optional extension of its own) and loaded through ctypes by
 * aaren_ts/engine/_native.py.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define AACI_AHEAD 4 /* streams whose judged forecasts are requested ahead of their turn */
#define AAREN_ACI_STEP_ABI 1

int aaren_aci_step_abi(void) { return AAREN_ACI_STEP_ABI; }

/*
 * erfc(z) for z >= 0 (NaN stays NaN): erfc(z) = t exp(-z^2 + P(t)) with
 * t = 1 / (1 + z / 2) and P the degree-9 Chebyshev fit of Numerical Recipes (erfcc, fractional error
 * below 1.2e-7), and exp by range reduction and a degree-6 polynomial. Plain arithmetic, so that the
 * loop calling it vectorises (the C library's erfcf does not, and costs about 20 ns a value).
 * Measured against double erfc on a 1e-6 grid of z in [0, 3.6] (p down to 4e-7): relative error at
 * most 1.4e-6, largest where z^2 rounds in float32. Used only for the level decisions, where a p-value
 * is compared with levels of at least 1e-6.
 */
static inline float erfc_positive(float z) {
    const float t = 1.0f / (1.0f + 0.5f * z);
    /* Horner's form of P(t) */
    float poly = 0.17087277f;
    poly = -0.82215223f + t * poly;
    poly = 1.48851587f + t * poly;
    poly = -1.13520398f + t * poly;
    poly = 0.27886807f + t * poly;
    poly = -0.18628806f + t * poly;
    poly = 0.09678418f + t * poly;
    poly = 0.37409196f + t * poly;
    poly = 1.00002368f + t * poly;
    poly = -1.26551223f + t * poly;
    float x = -z * z + poly; /* exp(x), x <= 0: 2^k e^f with f in [-ln2/2, ln2/2] */
    x = x < -87.0f ? -87.0f : x;
    const float k = (float)(int32_t)(x * 1.44269504f - 0.5f); /* nearest (x < 0), without floorf */
    const float f = (x - k * 0.693145751953125f) - k * 1.428606765330187e-06f;
    const float e = 1.0f + f * (1.0f + f * (0.5f + f * (1.6666667e-1f + f * (4.1666668e-2f +
                                                 f * (8.3333338e-3f + f * 1.3888889e-3f)))));
    union {
        float f;
        int32_t i;
    } scale = {.i = ((int32_t)k + 127) << 23};
    return t * e * scale.f;
}

/* Ask for the ring cells stream r will judge: one cache line per horizon step, far apart. */
static void prefetch_diagonal(const float *issued, int64_t r, int64_t n, int64_t T, int64_t C) {
    const int64_t row = T * C, base = r * T * row;
    int64_t slot = (n - 1) % T;
    for (int64_t h = 0; h < T && h < n; ++h, slot = slot == 0 ? T - 1 : slot - 1)
        __builtin_prefetch(issued + 2 * (base + slot * row + h * C));
}

/*
 * n_streams:     S, the streams the state holds
 * levels:        (S, L, T, C) float32, updated in place
 * issued:        (S, T, T, C, 2) float32 rings of (mean, sd) pairs, slot-major; the advanced
 *                streams' next slot is written
 * n_issued:      (S,) forecasts each stream had issued before this step (not written)
 * streams:       (R,) the distinct streams (rows of levels, issued, n_issued) that the R rows of the
 *                inputs belong to, or NULL: the first R streams, in order
 * advanced:      (R,) 1 where the row's stream moved by one observation (others are left as they are)
 * y:             (R, C) the observations (NaN: missing, judges nothing)
 * loc, scale:    (R, T, C) the forecasts issued after the observation
 * known:         (R, T, C) added to the judged means (covariates' known effect), or NULL
 * nominal:       (L,) the levels' nominal values
 * judge:         0: only the new forecasts go into the rings (the levels stay)
 * Returns 0; -1 if scratch memory could not be allocated; -2 if an argument does not fit the state
 * (a dimension below 1, more rows than streams, a stream index outside [0, S), a negative issued
 * count). Nothing is written unless it returns 0.
 */
int aaren_aci_step(int64_t n_streams, int64_t n_rows, int horizon, int channels, int n_levels,
                   float *levels, float *issued, const int64_t *n_issued, const int64_t *streams,
                   const uint8_t *advanced, const float *y, const float *loc, const float *scale,
                   const float *known, const float *nominal, float rate, float min_level, int judge) {
    const int64_t T = horizon, C = channels, L = n_levels;
    const int64_t row = T * C;
    if (T < 1 || C < 1 || L < 1 || n_rows < 0 || n_streams < 0) return -2;
    if (streams == NULL ? n_rows > n_streams : 0) return -2;
    for (int64_t r = 0; r < n_rows; ++r) {
        const int64_t s = streams != NULL ? streams[r] : r;
        if (s < 0 || s >= n_streams || n_issued[s] < 0) return -2;
    }
    float *work = (float *)malloc(3 * (size_t)row * sizeof(float));
    if (work == NULL) return -1;
    for (int64_t r = 0; r < n_rows; ++r) {
        if (judge && r + AACI_AHEAD < n_rows) {
            const int64_t ahead = streams != NULL ? streams[r + AACI_AHEAD] : r + AACI_AHEAD;
            prefetch_diagonal(issued, ahead, n_issued[ahead], T, C);
        }
        if (!advanced[r]) continue;
        const int64_t s = streams != NULL ? streams[r] : r; /* this row's stream */
        const int64_t n = n_issued[s];
        float *ring = issued + 2 * s * T * row;
        if (judge) {
            const int64_t judged = n < T ? n : T;
            /* the judged forecasts, one per horizon step on the ring's diagonal (each in a cache
               line of its own), with the observation each is judged by: NaN where it is missing */
            float *mean = work, *sd = work + row, *obs = work + 2 * row, *p_value = work;
            int64_t slot = (n - 1) % T; /* the forecast of horizon h + 1 was issued h steps ago */
            for (int64_t h = 0; h < judged; ++h, slot = slot == 0 ? T - 1 : slot - 1) {
                const int64_t at = slot * row + h * C;
                for (int64_t c = 0; c < C; ++c) {
                    const float seen = y[r * C + c];
                    const float effect = known != NULL ? known[r * row + h * C + c] : 0.0f;
                    mean[h * C + c] = ring[2 * (at + c)] + effect;
                    sd[h * C + c] = ring[2 * (at + c) + 1];
                    obs[h * C + c] = isfinite(seen) ? seen : NAN;
                }
            }
            const int64_t m = judged * C;
            for (int64_t k = 0; k < m; ++k)
                p_value[k] = erfc_positive(fabsf(obs[k] - mean[k]) / sd[k] * 0.70710678118654752f);
            /* a <- a + nominal * step - missed * step, step = rate (0 where nothing was judged: NaN) */
            float *lv = levels + s * L * row;
            for (int64_t l = 0; l < L; ++l) {
                float *a = lv + l * row;
                const float nominal_l = nominal[l];
                for (int64_t k = 0; k < m; ++k) {
                    const float p = p_value[k];
                    const float step = (float)(p == p) * rate;
                    const float missed = (float)((p < a[k]) | (p < min_level));
                    a[k] = (a[k] + nominal_l * step) - missed * step;
                }
            }
        }
        const int64_t slot = n % T;
        float *dest = ring + 2 * slot * row;
        for (int64_t k = 0; k < row; ++k) {
            dest[2 * k] = loc[r * row + k];
            dest[2 * k + 1] = scale[r * row + k];
        }
    }
    free(work);
    return 0;
}
