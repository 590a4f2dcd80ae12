/* The floor for per-op overhead: TFE_Execute(AddV2) on two float32 scalars in a C loop,
 * with the op created and deleted per call as a binding must. Prints nanoseconds per op. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "tensorflow/c/c_api.h"
#include "tensorflow/c/eager/c_api.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv) {
  long iterations = argc > 1 ? atol(argv[1]) : 200000;
  TF_Status *status = TF_NewStatus();
  TFE_ContextOptions *options = TFE_NewContextOptions();
  TFE_Context *ctx = TFE_NewContext(options, status);
  TFE_DeleteContextOptions(options);
  float one = 1.0f;
  TF_Tensor *t = TF_AllocateTensor(TF_FLOAT, NULL, 0, sizeof(float));
  *(float *)TF_TensorData(t) = one;
  TFE_TensorHandle *a = TFE_NewTensorHandle(t, status);
  double best = 1e18;
  for (int round = 0; round < 5; round++) {
    double start = now_ns();
    for (long i = 0; i < iterations; i++) {
      TFE_Op *op = TFE_NewOp(ctx, "AddV2", status);
      TFE_OpSetAttrType(op, "T", TF_FLOAT);
      TFE_OpAddInput(op, a, status);
      TFE_OpAddInput(op, a, status);
      TFE_TensorHandle *out[1];
      int n = 1;
      TFE_Execute(op, out, &n, status);
      if (TF_GetCode(status) != TF_OK) {
        fprintf(stderr, "%s\n", TF_Message(status));
        return 1;
      }
      TFE_DeleteTensorHandle(out[0]);
      TFE_DeleteOp(op);
    }
    double per_op = (now_ns() - start) / iterations;
    if (per_op < best) best = per_op;
  }
  printf("%.1f\n", best);
  TFE_DeleteTensorHandle(a);
  TF_DeleteTensor(t);
  TFE_DeleteContext(ctx);
  TF_DeleteStatus(status);
  return 0;
}
