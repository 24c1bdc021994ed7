#include "dtrain/nn/module.hpp"

namespace dtrain::nn {

void ensure(tensor& t, const shape_t& shape, device where) {
  if (t.defined() && t.shape() == shape && t.where() == where)
    return;
  t = tensor::empty(shape, where);
}

} // namespace dtrain::nn
