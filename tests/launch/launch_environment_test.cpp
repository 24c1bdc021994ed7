// What `dtrain launch` reads from its launcher: Slurm's step variables before
// the job's, torchrun's, the head's address and port, and errors that name
// the variable at fault.
#include <boost/test/unit_test.hpp>

#include <map>

#include "dtrain/launch/environment.hpp"

using namespace dtrain;
using dtrain::launch::read_launch_env;

namespace {

launch::env_lookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

// A task of `srun -N3 -n5` (2, 2 and 1 tasks) inside a larger job.
std::map<std::string, std::string> slurm_task() {
  return {{"SLURM_PROCID", "3"},
          {"SLURM_LOCALID", "1"},
          {"SLURM_NODEID", "1"},
          {"SLURM_STEP_NUM_TASKS", "5"},
          {"SLURM_NTASKS", "8"},
          {"SLURM_STEP_NODELIST", "gpu[07-09]"},
          {"SLURM_JOB_NODELIST", "gpu[01-09]"},
          {"SLURM_STEP_NUM_NODES", "3"},
          {"SLURM_JOB_NUM_NODES", "9"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"},
          {"SLURM_TASKS_PER_NODE", "1(x8)"},
          {"SLURM_GPUS_ON_NODE", "4"},
          {"SLURM_JOB_ID", "1234567"},
          {"SLURM_STEP_ID", "2"}};
}

} // namespace

BOOST_AUTO_TEST_SUITE(launch_environment)

BOOST_AUTO_TEST_CASE(slurm_step_variables_win_over_the_jobs) {
  auto got = read_launch_env(env_of(slurm_task()));
  BOOST_REQUIRE_MESSAGE(got.is_ok(), got.error().to_string());
  BOOST_TEST(got->launcher == "slurm");
  BOOST_TEST(got->rank == 3);
  BOOST_TEST(got->world_size == 5);
  BOOST_TEST(got->nodes == 3);
  BOOST_TEST(got->node_rank == 1);
  BOOST_TEST(got->local_rank == 1);
  BOOST_TEST(got->local_world_size == 2);
  BOOST_TEST(got->gpus_on_node == 4);
  BOOST_TEST((got->hosts == std::vector<std::string>{"gpu07", "gpu08", "gpu09"}));
  BOOST_TEST(got->head_host == "gpu07");
  BOOST_TEST(got->head_port == 15000 + (4567 + 101 * 2) % 10000);  // the step parts steps
  BOOST_TEST(got->job_id == "1234567");
  bool sourced = false;
  for (const auto& s : got->sources)
    sourced = sourced || s == "world size 5 (SLURM_STEP_NUM_TASKS)";
  BOOST_TEST(sourced);
}

BOOST_AUTO_TEST_CASE(slurm_job_variables_serve_when_no_step_ones_are_set) {
  auto vars = slurm_task();
  for (const char* step : {"SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST", "SLURM_STEP_NUM_NODES",
                           "SLURM_STEP_TASKS_PER_NODE"})
    vars.erase(step);
  vars["SLURM_NTASKS"] = "9";
  vars["SLURM_TASKS_PER_NODE"] = "1(x9)";
  vars["SLURM_NODEID"] = "5";
  vars["SLURM_LOCALID"] = "0";
  vars["DTRAIN_PORT"] = "7000";
  auto got = read_launch_env(env_of(vars));
  BOOST_REQUIRE_MESSAGE(got.is_ok(), got.error().to_string());
  BOOST_TEST(got->world_size == 9);
  BOOST_TEST(got->nodes == 9);
  BOOST_TEST(got->hosts.size() == 9u);
  BOOST_TEST(got->head_host == "gpu01");
  BOOST_TEST(got->local_world_size == 1);
  BOOST_TEST(got->head_port == 7000);
}

BOOST_AUTO_TEST_CASE(torchrun_variables_and_a_head_port_beside_its_store) {
  auto got = read_launch_env(env_of({{"TORCHELASTIC_RUN_ID", "none"},
                                     {"RANK", "1"},
                                     {"WORLD_SIZE", "2"},
                                     {"LOCAL_RANK", "1"},
                                     {"LOCAL_WORLD_SIZE", "2"},
                                     {"GROUP_RANK", "0"},
                                     {"MASTER_ADDR", "127.0.0.1"},
                                     {"MASTER_PORT", "29500"}}));
  BOOST_REQUIRE_MESSAGE(got.is_ok(), got.error().to_string());
  BOOST_TEST(got->launcher == "torchrun");
  BOOST_TEST(got->rank == 1);
  BOOST_TEST(got->nodes == 1);
  BOOST_TEST(got->head_host == "127.0.0.1");
  BOOST_TEST(got->head_port == 29501);  // 29500 is torchrun's own store
}

BOOST_AUTO_TEST_CASE(missing_or_malformed_variables_are_named) {
  struct bad_case {
    std::string var, value, expect;  // value "" erases var
  };
  const std::vector<bad_case> cases = {
      {"SLURM_STEP_NODELIST", "gpu[07-09", "SLURM_STEP_NODELIST: host list 'gpu[07-09'"},
      {"SLURM_PROCID", "x3", "SLURM_PROCID='x3' is not a non-negative integer"},
      {"SLURM_PROCID", "7", "rank 7 is not below world size 5"},
      {"SLURM_STEP_NUM_NODES", "4", "names 3 hosts but the step has 4 nodes"},
      {"SLURM_STEP_TASKS_PER_NODE", "2(x3)", "does not give 5 tasks on 3 nodes"},
      {"SLURM_LOCALID", "", "local rank: none of SLURM_LOCALID is set"},
  };
  for (const auto& c : cases) {
    auto vars = slurm_task();
    if (c.value.empty())
      vars.erase(c.var);
    else
      vars[c.var] = c.value;
    auto got = read_launch_env(env_of(vars));
    BOOST_REQUIRE_MESSAGE(!got.is_ok(), c.var << "='" << c.value << "' was accepted");
    BOOST_TEST(got.error().message().find(c.expect) != std::string::npos, got.error().to_string());
  }
  auto none = read_launch_env(env_of({}));
  BOOST_REQUIRE(!none.is_ok());
  BOOST_TEST(none.error().code() == error_code::not_found);
  BOOST_TEST(none.error().message().find("SLURM_PROCID") != std::string::npos);
  auto no_master = read_launch_env(env_of({{"GROUP_RANK", "0"}, {"RANK", "0"}, {"WORLD_SIZE", "1"},
                                           {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"}}));
  BOOST_REQUIRE(!no_master.is_ok());
  BOOST_TEST(no_master.error().message().find("MASTER_ADDR") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
