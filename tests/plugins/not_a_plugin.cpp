// A shared library that is not a dtrain plugin: no DTRAIN_PLUGIN in it.
extern "C" int dtrain_test_not_a_plugin() { return 42; }
