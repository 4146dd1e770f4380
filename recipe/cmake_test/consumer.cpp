// Links the C++ API end to end: tensor creation, autograd and a BLAS-backed matmul.
#include <torch/torch.h>

#include <iostream>

int main() {
  torch::Tensor a = torch::ones({3, 3}, torch::requires_grad());
  torch::Tensor b = torch::eye(3);
  torch::Tensor loss = torch::matmul(a, b).sum();
  loss.backward();
  const bool ok = loss.item<float>() == 9.0F && a.grad().sum().item<float>() == 9.0F;
  std::cout << "libtorch consumer: " << (ok ? "ok" : "WRONG RESULT") << "\n";
  return ok ? 0 : 1;
}
