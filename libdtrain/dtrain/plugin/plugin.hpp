#pragma once

#include <string>

#include "dtrain/build_config.hpp"
#include "dtrain/train/operator.hpp"

/// Writing a plugin: a shared library of training operators that a driver
/// names (trainer_config.plugins, `plugins:` in an experiment file) and
/// the trainer ships to the nodes that host its replicas.
///
///   #include "dtrain/plugin/plugin.hpp"
///   class my_op : public dtrain::train::training_operator { ... };
///   DTRAIN_PLUGIN(registrar) {
///     registrar.add_operator("my_op", [] { return std::make_unique<my_op>(); });
///   }
///
/// Build it against the installed dtrain (find_package(dtrain), target
/// dtrain::plugin). DTRAIN_PLUGIN puts the ABI tag of the dtrain it was
/// compiled against into the library; a process refuses a library whose
/// tag differs from its own before it loads it (naming both), because C++
/// classes such as training_operator have no stable ABI across versions or
/// compilers. Operators registered here are visible only to the trainers
/// that name the plugin, never process-wide.
namespace dtrain::plugin {

class registrar {
public:
  virtual ~registrar() = default;
  virtual void add_operator(const std::string& name, train::operator_factory factory) = 0;
};

} // namespace dtrain::plugin

#define DTRAIN_PLUGIN_STR2(x) #x
#define DTRAIN_PLUGIN_STR(x) DTRAIN_PLUGIN_STR2(x)

/// The ABI tag: dtrain's version, the C++ ABI version and the libstdc++
/// string ABI. A running dtrain compares its own tag (plugin::abi_tag())
/// with the one found in the library's bytes.
#define DTRAIN_ABI_TAG                                                     \
  "dtrain " DTRAIN_VERSION "; gxx-abi " DTRAIN_PLUGIN_STR(__GXX_ABI_VERSION) \
  "; cxx11-string-abi " DTRAIN_PLUGIN_STR(_GLIBCXX_USE_CXX11_ABI)

/// The marker the loader scans the file for, followed by the tag and a NUL.
#define DTRAIN_PLUGIN_ABI_MARKER "dtrain-plugin-abi:"

#define DTRAIN_PLUGIN(registrar_name)                                                  \
  extern "C" {                                                                         \
  /* extern: a namespace-scope const would have internal linkage */                    \
  __attribute__((visibility("default"), used)) extern const char dtrain_plugin_abi[] = \
      DTRAIN_PLUGIN_ABI_MARKER DTRAIN_ABI_TAG;                                         \
  __attribute__((visibility("default"))) void dtrain_plugin_init_v1(                   \
      ::dtrain::plugin::registrar& r);                                                 \
  }                                                                                    \
  static void dtrain_plugin_init_body(::dtrain::plugin::registrar& registrar_name);    \
  void dtrain_plugin_init_v1(::dtrain::plugin::registrar& r) { dtrain_plugin_init_body(r); } \
  static void dtrain_plugin_init_body(::dtrain::plugin::registrar& registrar_name)
