// Distributed batch inference on real processes on loopback: a checkpoint
// restored into two replicas on two node processes predicts the Fashion-
// MNIST test set in input order with the checkpoint's validation accuracy;
// with one node killed (-9) mid-way the other replica redoes its chunks and
// the file is byte for byte the same.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>

#include "support/loopback_cluster.hpp"
#include "dtrain/driver/prediction.hpp"
#include "dtrain/driver/trainer.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::loopback_cluster;
using std::chrono::milliseconds;

namespace {

trainer_config mlp(const std::string& checkpoints) {
  trainer_config t;
  t.name = "predicting";
  t.operator_name = "mlp_classifier";
  t.config = {{"hidden", "64"}, {"data_dir", dtrain::testing::fashion_mnist_dir()}};
  t.num_replicas = 2;
  t.global_batch_size = 128;
  t.seed = 3;
  t.collective_timeout = milliseconds(20000);
  t.checkpoint_dir = checkpoints;
  return t;
}

// The rows of a prediction file: their index column, in file order, and
// whether the header is there.
std::vector<int64_t> indices_of(const std::string& text, bool& header) {
  std::istringstream in(text);
  std::string line;
  header = std::getline(in, line) && line.rfind("index,target,prediction,output_0", 0) == 0;
  std::vector<int64_t> out;
  while (std::getline(in, line))
    out.push_back(std::stoll(line.substr(0, line.find(','))));
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(batch_inference)

BOOST_AUTO_TEST_CASE(two_replicas_predict_the_test_set_in_order_and_a_killed_node_changes_nothing) {
  loopback_cluster lc(2);
  dtrain::testing::temp_dir dir;
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  double accuracy = 0;
  {
    auto t = trainer::create(*c, mlp(dir.file("ckpt"))).value();
    BOOST_REQUIRE(t->train().is_ok());  // epoch 1, checkpointed
    accuracy = t->validate().value().accuracy;
    BOOST_REQUIRE(t->shutdown().is_ok());
  }
  predict_report first;
  {
    auto t = trainer::create(*c, mlp("")).value();
    BOOST_REQUIRE(t->restore(dir.file("ckpt")).is_ok());
    predict_options po;
    po.output = dir.file("first.csv");
    po.chunk_rows = 500;
    auto r = predict(*t, po);
    (void)t->shutdown();
    BOOST_REQUIRE_MESSAGE(r.is_ok(), r.error().to_string());
    first = *r;
  }
  BOOST_TEST(first.rows == 10000);
  BOOST_TEST(first.chunks == 20);
  BOOST_TEST(first.redone == 0);
  BOOST_TEST(first.accuracy == accuracy);  // the same argmax counted the same way
  BOOST_TEST_MESSAGE("predicted 10000 rows at " << first.rows_per_second << " rows/s, accuracy "
                                                << first.accuracy << " (validation " << accuracy
                                                << ")");
  const std::string text = dtrain::testing::read_file(dir.file("first.csv"));
  bool header = false;
  auto indices = indices_of(text, header);
  BOOST_TEST(header);
  BOOST_REQUIRE(indices.size() == 10000u);
  for (int64_t i = 0; i < 10000; ++i)
    if (indices[static_cast<size_t>(i)] != i) {
      BOOST_TEST(indices[static_cast<size_t>(i)] == i);
      break;
    }

  // Replica 1's node dies (-9) once it has answered a chunk: its chunk in
  // flight goes to replica 0, and the file is the same.
  lc.add_node();  // the trainer needs two nodes again; the victim is one of the three
  std::atomic<bool> killed{false};
  pid_t victim_pid = 0;
  {
    auto t = trainer::create(*c, mlp("")).value();
    BOOST_REQUIRE(t->restore(dir.file("ckpt")).is_ok());
    auto victim = lc.node_at(t->placement()[1].info.address);
    BOOST_REQUIRE(victim != nullptr);
    victim_pid = victim->pid();
    predict_options po;
    po.output = dir.file("second.csv");
    po.chunk_rows = 500;
    po.chunk_timeout = milliseconds(3000);
    po.on_chunk = [&](int rank, int64_t) {
      if (rank == 1 && !killed.exchange(true))
        kill(victim_pid, SIGKILL);
    };
    auto r = predict(*t, po);
    (void)t->shutdown();
    BOOST_REQUIRE_MESSAGE(r.is_ok(), r.error().to_string());
    BOOST_TEST(killed.load());
    BOOST_TEST(r->redone >= 1);
    BOOST_TEST(r->failed_replicas == 1);
    BOOST_TEST_MESSAGE("with a node killed: " << r->redone << " chunk(s) redone, "
                                              << r->seconds << " s");
  }
  const std::string second = dtrain::testing::read_file(dir.file("second.csv"));
  if (second != text) {
    std::istringstream a(text), b(second);
    std::string la, lb;
    int shown = 0;
    while (std::getline(a, la) && std::getline(b, lb) && shown < 3)
      if (la != lb) {
        BOOST_TEST_MESSAGE("first:  " << la << "\nsecond: " << lb);
        ++shown;
      }
  }
  BOOST_TEST((second == text));
  lc.stop_all(milliseconds(5000));
}

BOOST_AUTO_TEST_SUITE_END()
