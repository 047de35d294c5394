// Reference weight quantizers of the K-quant formats: the same searches and the same float
// operations, in the same order, as ggml's quantize_row_q{2,3,4,5,6}_K_ref, which is what
// llama-quantize writes when no importance matrix is given. Scalar only (quantizing a model is
// a one-off job); kernels are built with -ffp-contract=off, so nothing is fused behind our back.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/kquant/kernels.h"
#include "kernels/kquant/qx_K_scalar.h"

namespace baton::kernels::scalar {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

// Fits x ~ scale * L - the_min with L in 0..nmax (ggml's make_qkx2_quants): a first guess from
// the range, then nstep + 1 trial scales refined by weighted least squares. Returns the scale.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * static_cast<float>(L[i]) + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      const float fl = static_cast<float>(l);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        error += weights[i] * diff;
      }
      if (error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// The element of x[0..n) with the largest magnitude (the first one on ties), with its sign.
float largest_magnitude(int n, const float* x) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  return max;
}

// Symmetric fit x ~ scale * (L - nmax), L in 0..2 nmax - 1, weights x^2 (ggml's make_qx_quants
// with rmse_type 1 and no importance): 19 trial scales around nmax / amax.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
  const float max = largest_magnitude(n, x);
  if (std::fabs(max) < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    const float fl = static_cast<float>(l);
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      const float w = x[i] * x[i];
      const float fl = static_cast<float>(l);
      sumlx += w * x[i] * fl;
      suml2 += w * fl * fl;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * x[i]);
        L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Symmetric fit for Q3_K (ggml's make_q3_quants with do_rmse): L in 0..2 nmax - 1 after a
// coordinate-descent refinement of the x^2-weighted error.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
  const float max = largest_magnitude(n, x);
  if (std::fabs(max) < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const float li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      if (slx > 0) {
        float sl2 = suml2 - w * li * li;
        int new_l = nearest_int(x[i] * sl2 / slx);
        new_l = std::max(-nmax, std::min(nmax - 1, new_l));
        if (new_l != L[i]) {
          const float nl = static_cast<float>(new_l);
          slx += w * x[i] * nl;
          sl2 += w * nl * nl;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (!n_changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return sumlx / suml2;
}

// Q4_K / Q5_K share everything but nmax, the search parameters and the final bit packing.
// Fills scales[12], d, dmin and L[256] (0..nmax) of one super-block.
void quantize_scales_mins_k4(const float* x, int nmax, float rmin, int nstep, uint8_t* scales_out, uint16_t* d_out,
                             uint16_t* dmin_out, uint8_t* L) {
  uint8_t Laux[32];
  float weights[32], mins[8], scales[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  std::memset(scales_out, 0, 12);
  for (int j = 0; j < 8; ++j) {
    // ggml stores nearest_int into a uint8_t before clamping: keep that wrap-around.
    const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      scales_out[j] = ls;
      scales_out[j + 4] = lm;
    } else {
      scales_out[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      scales_out[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      scales_out[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  *d_out = fp32_to_fp16(max_scale / 63.f);
  *dmin_out = fp32_to_fp16(max_min / 63.f);
  for (int j = 0; j < 8; ++j) {
    const ScaleMin sm = unpack_scale_min_k4(j, scales_out);
    const float d = fp16_to_fp32(*d_out) * static_cast<float>(sm.scale);
    if (d == 0.0f) continue;
    const float dm = fp16_to_fp32(*dmin_out) * static_cast<float>(sm.min);
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }
}

template <class Block>
void store_block(void* dst, int64_t i, const Block& b) {
  std::memcpy(static_cast<uint8_t*>(dst) + i * static_cast<int64_t>(sizeof(Block)), &b, sizeof b);
}

}  // namespace

void quantize_q4_k_ref(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    BlockQ4K y{};
    uint8_t L[kQK_K];
    quantize_scales_mins_k4(x, 15, -1.0f, 20, y.scales, &y.d, &y.dmin, L);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) y.qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
    store_block(dst, i, y);
  }
}

void quantize_q5_k_ref(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    BlockQ5K y{};
    uint8_t L[kQK_K];
    quantize_scales_mins_k4(x, 31, -0.5f, 15, y.scales, &y.d, &y.dmin, L);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
        y.qs[32 * c + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
        y.qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
    store_block(dst, i, y);
  }
}

void quantize_q6_k_ref(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    BlockQ6K y{};
    int8_t L[kQK_K];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int s = 0; s < 16; ++s) {
      scales[s] = make_qx_quants(16, 32, x + 16 * s, L + 16 * s);
      if (std::fabs(scales[s]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[s]);
        max_scale = scales[s];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      store_block(dst, i, y);  // all zero
      continue;
    }
    const float iscale = -128.f / max_scale;
    y.d = fp32_to_fp16(1 / iscale);
    for (int s = 0; s < 16; ++s) y.scales[s] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[s])));
    for (int s = 0; s < 16; ++s) {
      const float d = fp16_to_fp32(y.d) * static_cast<float>(y.scales[s]);
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int(x[16 * s + ii] / d);
        L[16 * s + ii] = static_cast<int8_t>(std::max(-32, std::min(31, l)) + 32);
      }
    }
    for (int h = 0; h < 2; ++h) {
      const int8_t* Lh = L + 128 * h;
      for (int l = 0; l < 32; ++l) {
        y.ql[64 * h + l] = static_cast<uint8_t>((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
        y.ql[64 * h + 32 + l] = static_cast<uint8_t>((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
        y.qh[32 * h + l] = static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                                                ((Lh[l + 96] >> 4) << 6));
      }
    }
    store_block(dst, i, y);
  }
}

void quantize_q3_k_ref(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    BlockQ3K y{};
    int8_t L[kQK_K];
    float scales[16];
    float max_scale = 0, amax = 0;
    for (int s = 0; s < 16; ++s) {
      scales[s] = make_q3_quants(16, 4, x + 16 * s, L + 16 * s);
      if (std::fabs(scales[s]) > amax) {
        amax = std::fabs(scales[s]);
        max_scale = scales[s];
      }
    }
    if (max_scale != 0.0f) {
      const float iscale = -32.f / max_scale;
      for (int s = 0; s < 16; ++s) {
        const int l = std::max(-32, std::min(31, nearest_int(iscale * scales[s]))) + 32;
        if (s < 8) y.scales[s] = static_cast<uint8_t>(l & 0xF);
        else y.scales[s - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
        y.scales[s % 4 + 8] |= static_cast<uint8_t>((l >> 4) << (2 * (s / 4)));
      }
      y.d = fp32_to_fp16(1 / iscale);
    }
    for (int s = 0; s < 16; ++s) {
      const float d = fp16_to_fp32(y.d) * static_cast<float>(unpack_scale_q3k(s, y.scales) - 32);
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int(x[16 * s + ii] / d);
        L[16 * s + ii] = static_cast<int8_t>(std::max(-4, std::min(3, l)) + 4);
      }
    }
    for (int e = 0; e < kQK_K; ++e) {
      if (L[e] > 3) {
        y.hmask[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
        L[e] = static_cast<int8_t>(L[e] - 4);
      }
    }
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < 32; ++l)
        y.qs[32 * h + l] = static_cast<uint8_t>(L[128 * h + l] | (L[128 * h + l + 32] << 2) |
                                                (L[128 * h + l + 64] << 4) | (L[128 * h + l + 96] << 6));
    store_block(dst, i, y);
  }
}

void quantize_q2_k_ref(const float* x, void* dst, int64_t n) {
  const float q4scale = 15.f;
  for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
    BlockQ2K y{};
    uint8_t L[kQK_K], Laux[16];
    float weights[16], mins[16], scales[16];
    float max_scale = 0, max_min = 0;
    for (int s = 0; s < 16; ++s) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * s + l]);
      scales[s] = make_qkx2_quants(16, 3, x + 16 * s, weights, L + 16 * s, &mins[s], Laux, -0.5f, 0.1f, 15, true);
      if (scales[s] > max_scale) max_scale = scales[s];
      if (mins[s] > max_min) max_min = mins[s];
    }
    if (max_scale > 0) {
      const float iscale = q4scale / max_scale;
      for (int s = 0; s < 16; ++s) y.scales[s] = static_cast<uint8_t>(nearest_int(iscale * scales[s]));
      y.d = fp32_to_fp16(max_scale / q4scale);
    }
    if (max_min > 0) {
      const float iscale = q4scale / max_min;
      for (int s = 0; s < 16; ++s) y.scales[s] |= static_cast<uint8_t>(nearest_int(iscale * mins[s]) << 4);
      y.dmin = fp32_to_fp16(max_min / q4scale);
    }
    for (int s = 0; s < 16; ++s) {
      const float d = fp16_to_fp32(y.d) * static_cast<float>(y.scales[s] & 0xF);
      if (d == 0.0f) continue;
      const float dm = fp16_to_fp32(y.dmin) * static_cast<float>(y.scales[s] >> 4);
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int((x[16 * s + ii] + dm) / d);
        L[16 * s + ii] = static_cast<uint8_t>(std::max(0, std::min(3, l)));
      }
    }
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < 32; ++l)
        y.qs[32 * h + l] = static_cast<uint8_t>(L[128 * h + l] | (L[128 * h + l + 32] << 2) |
                                                (L[128 * h + l + 64] << 4) | (L[128 * h + l + 96] << 6));
    store_block(dst, i, y);
  }
}

}  // namespace baton::kernels::scalar
