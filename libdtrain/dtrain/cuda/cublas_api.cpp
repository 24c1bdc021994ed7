// cuBLAS loaded on first use (cublas_api.hpp).
#include "dtrain/cuda/cublas_api.hpp"

#include <dlfcn.h>

#include <mutex>

#include "dtrain/cuda/check.hpp"

namespace dtrain::cuda {

namespace {

// cublas_v2.h maps most names to their _v2 symbols by macro: spelling the
// expanded name gives the symbol to look up.
#define DTRAIN_SYMBOL_NAME(x) DTRAIN_SYMBOL_NAME_(x)
#define DTRAIN_SYMBOL_NAME_(x) #x

struct loaded {
  cublas_api api;
  status outcome = status::ok();
};

template <class F>
bool bind(void* library, const char* name, F& out, std::string& missing) {
  out = reinterpret_cast<F>(dlsym(library, name));
  if (out == nullptr)
    missing += (missing.empty() ? "" : ", ") + std::string(name);
  return out != nullptr;
}

loaded load() {
  loaded out;
  const std::string candidates[] = {DTRAIN_CUBLAS_SONAME, DTRAIN_CUBLAS_FILE};
  void* library = nullptr;
  std::string tried;
  for (const std::string& name : candidates) {
    if (name.empty())
      continue;
    library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr)
      break;
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + name + ": " + (why ? why : "not found");
  }
  if (library == nullptr) {
    out.outcome = status(error_code::cuda_error,
                         "cannot load cuBLAS, which GEMMs on a GPU need (" + tried + ")");
    return out;
  }
  std::string missing;
  cublas_api& a = out.api;
  bind(library, DTRAIN_SYMBOL_NAME(cublasCreate), a.create, missing);
  bind(library, DTRAIN_SYMBOL_NAME(cublasDestroy), a.destroy, missing);
  bind(library, DTRAIN_SYMBOL_NAME(cublasSetStream), a.set_stream, missing);
  bind(library, DTRAIN_SYMBOL_NAME(cublasSetMathMode), a.set_math_mode, missing);
  bind(library, DTRAIN_SYMBOL_NAME(cublasSgemm), a.sgemm, missing);
  bind(library, DTRAIN_SYMBOL_NAME(cublasGemmEx), a.gemm_ex, missing);
  bind(library, DTRAIN_SYMBOL_NAME(cublasGetStatusName), a.status_name, missing);
  bind(library, DTRAIN_SYMBOL_NAME(cublasGetStatusString), a.status_string, missing);
  if (!missing.empty())
    out.outcome = status(error_code::cuda_error,
                         "the cuBLAS library loaded lacks " + missing + " (a version other "
                         "than the one dtrain was built with?)");
  // Never closed: handles live in thread_local caches until threads exit.
  return out;
}

const loaded& once() {
  static const loaded l = load();  // thread-safe initialization
  return l;
}

} // namespace

status load_cublas() { return once().outcome; }

const cublas_api& cublas() {
  const loaded& l = once();
  if (!l.outcome)
    detail::die(l.outcome.message());
  return l.api;
}

namespace detail {

std::string cublas_error_text(cublasStatus_t err, const char* file, int line,
                              const std::string& context) {
  const cublas_api& a = cublas();
  return std::string(file) + ":" + std::to_string(line) + ": " + context + ": " +
         a.status_name(err) + ": " + a.status_string(err);
}

} // namespace detail

} // namespace dtrain::cuda
