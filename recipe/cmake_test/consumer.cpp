// Links the C++ API end to end: tensor creation, autograd and a BLAS-backed matmul.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/variable.h>

#include <iostream>

int main() {
  at::Tensor a = at::ones({3, 3}).requires_grad_(true);
  at::Tensor b = at::eye(3);
  at::Tensor loss = at::matmul(a, b).sum();
  loss.backward();
  const bool ok = loss.item<float>() == 9.0F && a.grad().sum().item<float>() == 9.0F;
  std::cout << "libtorch consumer: " << (ok ? "ok" : "WRONG RESULT") << "\n";
  return ok ? 0 : 1;
}
