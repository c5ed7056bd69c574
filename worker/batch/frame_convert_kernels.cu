#include "worker/batch/frame_convert_kernels.h"

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace framemill {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;  // a grid-stride loop covers the rest

// a * b + c as the tensor code's addcmul rounds it: once (fused) or twice. The intrinsics are
// never contracted by the compiler, so each rounding is where it is written.
template <bool kFused>
__device__ __forceinline__ float MulAdd(float a, float b, float c) {
  if constexpr (kFused) {
    return __fmaf_rn(a, b, c);
  } else {
    return __fadd_rn(__fmul_rn(a, b), c);
  }
}

__device__ __forceinline__ float ToFloat(float v) { return v; }
__device__ __forceinline__ float ToFloat(__half v) { return __half2float(v); }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half FromFloat<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Clamped to [0, 1], NaN as 0 (exact in any of the three types: the bounds are representable).
__device__ __forceinline__ float Clamp01(float v) {
  v = v > 0.0f ? v : 0.0f;
  return v < 1.0f ? v : 1.0f;
}

// A float level (already + 0.5) into uint8, as a clamp to 0..255 and a truncating copy; NaN as 0.
__device__ __forceinline__ uint8_t Level(float v) {
  if (!(v > 0.0f)) return 0;
  if (v >= 255.0f) return 255;
  return static_cast<uint8_t>(v);
}

int Blocks(int64_t n) {
  return static_cast<int>(
      std::max<int64_t>(1, std::min(kMaxBlocks, (n + kThreads - 1) / kThreads)));
}

// One thread a 2x2 block: its chroma part of the three colours, then its four pixels.
template <typename T, bool kFused>
__global__ void Yuv420ToRgbKernel(YuvToRgbArgs a) {
  const int64_t cw = a.w / 2, ch = a.h / 2, blocks = ch * cw, n = a.b * blocks;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += step) {
    const int64_t i = k / blocks, br = (k % blocks) / cw, bc = k % cw;
    const uint8_t* frame = a.src + i * a.frame_bytes;
    const float u = frame[a.h * a.w + br * cw + bc];
    const float v = frame[a.h * a.w + blocks + br * cw + bc];
    float part[3];
    for (int p = 0; p < 3; ++p) {
      part[p] = MulAdd<kFused>(v, a.mv[p], MulAdd<kFused>(u, a.mu[p], a.offset[p]));
    }
    T* out = static_cast<T*>(a.dst);
    for (int dy = 0; dy < 2; ++dy) {
      const int64_t r = 2 * br + dy;
      for (int dx = 0; dx < 2; ++dx) {
        const int64_t c = 2 * bc + dx;
        const float y = frame[r * a.w + c];
        T* d = out + ((i * a.h + r) * a.w + c) * 3;
        for (int p = 0; p < 3; ++p) {
          // Stored as T, then clamped in T, as the tensor code does.
          float x = ToFloat(FromFloat<T>(MulAdd<kFused>(y, a.my[p], part[p])));
          if (!a.unclamped) x = Clamp01(x);
          d[p] = FromFloat<T>(x);
        }
      }
    }
  }
}

template <typename T>
__device__ __forceinline__ float At(const RgbOutArgs& a, int64_t i, int p, int64_t r, int64_t c) {
  return ToFloat(static_cast<const T*>(a.src)[i * a.s0 + p * a.s1 + r * a.s2 + c * a.s3]);
}

// One thread a pixel: clamp(y, 0, 1) * 255 + 0.5, truncated.
template <typename T, bool kFused>
__global__ void RgbToRgb24Kernel(RgbOutArgs a) {
  const int64_t n = a.b * a.h * a.w;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += step) {
    const int64_t i = k / (a.h * a.w), r = (k / a.w) % a.h, c = k % a.w;
    for (int p = 0; p < 3; ++p) {
      const float v = Clamp01(At<T>(a, i, p, r, c));
      a.dst[k * 3 + p] = static_cast<uint8_t>(static_cast<int>(MulAdd<kFused>(v, 255.0f, 0.5f)));
    }
  }
}

// One thread a 2x2 block: each pixel's luma and Y level, then the block's U and V, each the mean
// of four products summed in row order, as the tensor code's average pool sums them.
template <typename T>
__global__ void RgbToYuv420Kernel(RgbOutArgs a) {
  const int64_t cw = a.w / 2, ch = a.h / 2, blocks = ch * cw, n = a.b * blocks;
  const int64_t frame_bytes = a.h * a.w + 2 * blocks;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += step) {
    const int64_t i = k / blocks, br = (k % blocks) / cw, bc = k % cw;
    uint8_t* frame = a.dst + i * frame_bytes;
    float u = 0.0f, v = 0.0f;
    for (int dy = 0; dy < 2; ++dy) {
      const int64_t r = 2 * br + dy;
      for (int dx = 0; dx < 2; ++dx) {
        const int64_t c = 2 * bc + dx;
        const float red = At<T>(a, i, 0, r, c), green = At<T>(a, i, 1, r, c);
        const float blue = At<T>(a, i, 2, r, c);
        const float luma = __fadd_rn(__fadd_rn(__fmul_rn(red, a.kr), __fmul_rn(green, a.kg)),
                                     __fmul_rn(blue, a.kb));
        frame[r * a.w + c] = Level(__fadd_rn(__fmul_rn(luma, a.ys), a.y_add));
        u = __fadd_rn(u, __fmul_rn(__fsub_rn(blue, luma), a.u_scale));
        v = __fadd_rn(v, __fmul_rn(__fsub_rn(red, luma), a.v_scale));
      }
    }
    frame[a.h * a.w + br * cw + bc] = Level(__fadd_rn(__fdiv_rn(u, 4.0f), 128.5f));
    frame[a.h * a.w + blocks + br * cw + bc] = Level(__fadd_rn(__fdiv_rn(v, 4.0f), 128.5f));
  }
}

template <typename T>
cudaError_t LaunchYuv420ToRgbAs(const YuvToRgbArgs& a, cudaStream_t stream) {
  const int blocks = Blocks(a.b * (a.h / 2) * (a.w / 2));
  if (a.fused) {
    Yuv420ToRgbKernel<T, true><<<blocks, kThreads, 0, stream>>>(a);
  } else {
    Yuv420ToRgbKernel<T, false><<<blocks, kThreads, 0, stream>>>(a);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchRgbToRgb24As(const RgbOutArgs& a, cudaStream_t stream) {
  const int blocks = Blocks(a.b * a.h * a.w);
  if (a.fused) {
    RgbToRgb24Kernel<T, true><<<blocks, kThreads, 0, stream>>>(a);
  } else {
    RgbToRgb24Kernel<T, false><<<blocks, kThreads, 0, stream>>>(a);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchRgbToYuv420As(const RgbOutArgs& a, cudaStream_t stream) {
  RgbToYuv420Kernel<T><<<Blocks(a.b * (a.h / 2) * (a.w / 2)), kThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

// `launch` called with a value of the element type `type` names (its type is what counts).
template <typename Launch>
cudaError_t ForType(KernelFloat type, const Launch& launch) {
  switch (type) {
    case KernelFloat::kFloat16:
      return launch(__half());
    case KernelFloat::kBFloat16:
      return launch(__nv_bfloat16());
    case KernelFloat::kFloat32:
      break;
  }
  return launch(0.0f);
}

}  // namespace

cudaError_t LaunchYuv420ToRgb(const YuvToRgbArgs& a, cudaStream_t stream) {
  return ForType(a.type, [&](auto t) { return LaunchYuv420ToRgbAs<decltype(t)>(a, stream); });
}

cudaError_t LaunchRgbToRgb24(const RgbOutArgs& a, cudaStream_t stream) {
  return ForType(a.type, [&](auto t) { return LaunchRgbToRgb24As<decltype(t)>(a, stream); });
}

cudaError_t LaunchRgbToYuv420(const RgbOutArgs& a, cudaStream_t stream) {
  return ForType(a.type, [&](auto t) { return LaunchRgbToYuv420As<decltype(t)>(a, stream); });
}

}  // namespace framemill
