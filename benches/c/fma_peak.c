/* The machine's peak rate of float32 multiply-adds, the ceiling of any compute-bound kernel:
 * each thread runs CHAINS independent chains of vector FMAs (more than the FMA units' latency
 * times their count, so they never wait on one another) with the widest vectors the CPU has.
 * Prints GFLOP/s (a multiply-add is 2) of all threads together, the best of 5 rounds; prints
 * nothing and exits 1 on a CPU without FMA.
 *   fma_peak THREADS */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHAINS 12
#define STEPS 20000000L

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Defines NAME: one thread's chains on vectors VEC of LANES floats, compiled for TARGET with its
 * intrinsics; it returns the chains' sum, so that the compiler keeps the work. */
#define DEFINE_CHAINS(NAME, TARGET, VEC, LANES, SET1, FMADD, STOREU)                 \
  __attribute__((target(TARGET))) static float NAME(void) {                          \
    VEC acc[CHAINS];                                                                 \
    const VEC scale = SET1(0.999999f), shift = SET1(1e-7f);                          \
    for (int c = 0; c < CHAINS; c++) acc[c] = SET1((float)c);                        \
    for (long s = 0; s < STEPS; s++) {                                               \
      _Pragma("GCC unroll 12") for (int c = 0; c < CHAINS; c++)                      \
          acc[c] = FMADD(acc[c], scale, shift);                                      \
    }                                                                                \
    float values[LANES], sum = 0;                                                    \
    for (int c = 0; c < CHAINS; c++) {                                               \
      STOREU(values, acc[c]);                                                        \
      for (int i = 0; i < LANES; i++) sum += values[i];                              \
    }                                                                                \
    return sum;                                                                      \
  }

DEFINE_CHAINS(chains_512, "avx512f", __m512, 16, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_storeu_ps)
DEFINE_CHAINS(chains_256, "avx2,fma", __m256, 8, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_storeu_ps)

static int lanes;
static volatile float sink;

static void *run_chains(void *unused) {
  (void)unused;
  sink = lanes == 16 ? chains_512() : chains_256();
  return NULL;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1 || threads > 256) return 2;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) lanes = 16;
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) lanes = 8;
  else return 1;
  pthread_t ids[256];
  double best = 0;
  for (int round = 0; round < 5; round++) {
    double start = now_s();
    for (int t = 0; t < threads; t++) pthread_create(&ids[t], NULL, run_chains, NULL);
    for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    double flops = 2.0 * CHAINS * lanes * (double)STEPS * threads;
    double rate = flops / (now_s() - start) / 1e9;
    if (rate > best) best = rate;
  }
  printf("%.1f\n", best);
  return 0;
}
