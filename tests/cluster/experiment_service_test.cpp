// The experiment store kept by the head: rows on the wire, an embedded
// cluster's store through cluster::experiments(), write errors returned by
// the flush of their own experiment's writer (and refusing nothing else),
// storage that never changes, a store that cannot be opened, and drivers
// writing through a `dtrain start --head` process on loopback.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <thread>

#include "support/child_process.hpp"
#include "support/memory_store.hpp"
#include "dtrain/driver/cluster.hpp"
#include "dtrain/driver/experiment_client.hpp"
#include "dtrain/cluster/experiment_service.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::child_process;
using dtrain::testing::memory_store;
using dtrain::testing::temp_dir;
using std::chrono::milliseconds;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

cluster::options embedded_with(std::shared_ptr<memory_store> shared, const std::string& name) {
  cluster::options o;
  o.address = "";
  o.local_slots = 1;
  o.local_gpus = 0;
  o.store_path = name;
  // The head owns the store it opens; the test keeps a view of the same rows.
  struct view final : experiments::experiment_store {
    std::shared_ptr<memory_store> s;
    explicit view(std::shared_ptr<memory_store> x) : s(std::move(x)) {}
    result<int64_t> create_experiment(const experiments::experiment_row& e) override { return s->create_experiment(e); }
    status update_experiment(const experiments::experiment_row& e) override { return s->update_experiment(e); }
    result<experiments::experiment_row> experiment(int64_t id) override { return s->experiment(id); }
    result<std::vector<experiments::experiment_row>> experiments() override { return s->experiments(); }
    status delete_experiment(int64_t id) override { return s->delete_experiment(id); }
    status put_trial(const experiments::trial_row& t) override { return s->put_trial(t); }
    result<std::vector<experiments::trial_row>> trials(int64_t e) override { return s->trials(e); }
    status add_metrics(const std::vector<experiments::metric_row>& r) override { return s->add_metrics(r); }
    result<std::vector<experiments::metric_row>> metrics(int64_t e, const std::string& t) override { return s->metrics(e, t); }
    status put_checkpoint(const experiments::checkpoint_row& c) override { return s->put_checkpoint(c); }
    result<std::vector<experiments::checkpoint_row>> checkpoints(int64_t e, const std::string& t) override { return s->checkpoints(e, t); }
    status add_lineage(const experiments::lineage_row& l) override { return s->add_lineage(l); }
    result<std::vector<experiments::lineage_row>> lineage(int64_t e) override { return s->lineage(e); }
    status add_event(const experiments::event_row& e) override { return s->add_event(e); }
    result<std::vector<experiments::event_row>> events(int64_t e, const std::string& t) override { return s->events(e, t); }
    status flush() override { return s->flush(); }
    std::string where() const override { return s->where(); }
  };
  o.open_store = [shared]() -> result<std::unique_ptr<experiments::experiment_store>> {
    return std::unique_ptr<experiments::experiment_store>(new view(shared));
  };
  return o;
}

experiments::experiment_row an_experiment(const std::string& name) {
  experiments::experiment_row e;
  e.name = name;
  e.kind = "tune";
  e.configuration = "name: " + name + "\n";
  e.config_hash = "0123456789abcdef";
  e.metric = "validation_loss";
  e.minimize = true;
  e.created_at = 1700000000.5;
  e.updated_at = 1700000001.25;
  e.storage = "/tmp/nowhere/" + name;
  return e;
}

// Writes one of each row into experiment `id` and flushes.
void write_rows(experiments::experiment_store& s, int64_t id) {
  experiments::trial_row t;
  t.experiment = id;
  t.id = "00001";
  t.seq_created = 1;
  t.hyperparameters = "{\"lr\": 0.1}";
  t.state = "running";
  t.best = 0.25;
  t.last = std::nan("");
  BOOST_TEST(s.put_trial(t).is_ok());
  std::vector<experiments::metric_row> m(2);
  for (size_t i = 0; i < m.size(); ++i) {
    m[i].experiment = id;
    m[i].trial = "00001";
    m[i].epoch = 1;
    m[i].seq = 2;
  }
  m[0].name = "loss";
  m[0].value = inf;
  m[1].name = "validation_loss";
  m[1].value = -inf;
  BOOST_TEST(s.add_metrics(m).is_ok());
  experiments::checkpoint_row c;
  c.experiment = id;
  c.trial = "00001";
  c.epoch = 1;
  c.path = "/tmp/nowhere/00001/epoch-1";
  c.metric = 0.25;
  c.seq = 3;
  BOOST_TEST(s.put_checkpoint(c).is_ok());
  experiments::lineage_row l;
  l.experiment = id;
  l.trial = "00001";
  l.source = "00002";
  l.seq = 4;
  BOOST_TEST(s.add_lineage(l).is_ok());
  for (const char* trial : {"00001", "00002"}) {
    experiments::event_row ev;
    ev.experiment = id;
    ev.trial = trial;
    ev.seq = trial == std::string("00001") ? 6 : 5;
    ev.epoch = 3;
    ev.time = 1700000002.75;
    ev.kind = "failure";
    ev.message = std::string("failure 1 of at most 3: replica of ") + trial + " died";
    BOOST_TEST(s.add_event(ev).is_ok());
  }
  auto e = s.experiment(id);
  BOOST_REQUIRE(e.is_ok());
  e->state = "completed";
  BOOST_TEST(s.update_experiment(*e).is_ok());
  status flushed = s.flush();
  BOOST_TEST(flushed.is_ok(), flushed.to_string());
}

// What write_rows wrote, read back from `s`.
void check_rows(experiments::experiment_store& s, int64_t id, const std::string& name) {
  auto e = s.experiment(id);
  BOOST_REQUIRE_MESSAGE(e.is_ok(), e.error().to_string());
  BOOST_TEST(e->name == name);
  BOOST_TEST(e->state == "completed");
  BOOST_TEST(e->minimize);
  BOOST_TEST(e->created_at == 1700000000.5);
  auto trials = s.trials(id);
  BOOST_REQUIRE(trials.is_ok());
  BOOST_REQUIRE(trials->size() == 1u);
  BOOST_TEST((*trials)[0].best == 0.25);
  BOOST_TEST(std::isnan((*trials)[0].last));
  auto metrics = s.metrics(id, "00001");
  BOOST_REQUIRE(metrics.is_ok());
  BOOST_REQUIRE(metrics->size() == 2u);
  BOOST_TEST((*metrics)[0].value == inf);
  BOOST_TEST((*metrics)[1].value == -inf);
  auto checkpoints = s.checkpoints(id, "");
  BOOST_REQUIRE(checkpoints.is_ok());
  BOOST_REQUIRE(checkpoints->size() == 1u);
  BOOST_TEST((*checkpoints)[0].path == "/tmp/nowhere/00001/epoch-1");
  auto lineage = s.lineage(id);
  BOOST_REQUIRE(lineage.is_ok());
  BOOST_REQUIRE(lineage->size() == 1u);
  BOOST_TEST((*lineage)[0].source == "00002");
  auto events = s.events(id, "00001");
  BOOST_REQUIRE(events.is_ok());
  BOOST_REQUIRE(events->size() == 1u);
  BOOST_TEST((*events)[0].seq == 6);
  BOOST_TEST((*events)[0].epoch == 3);
  BOOST_TEST((*events)[0].time == 1700000002.75);
  BOOST_TEST((*events)[0].kind == "failure");
  BOOST_TEST((*events)[0].message == "failure 1 of at most 3: replica of 00001 died");
  auto all = s.events(id);
  BOOST_REQUIRE(all.is_ok());
  BOOST_REQUIRE(all->size() == 2u);
  BOOST_TEST((*all)[0].trial == "00002");  // by seq
}

// A head process on loopback with its experiment store at `store_path`.
struct head_process {
  temp_dir& home;
  std::unique_ptr<child_process> process;
  std::string address;

  head_process(temp_dir& h, const std::string& store_path) : home(h) {
    setenv("DTRAIN_HOME", home.path().c_str(), 1);
    std::vector<std::string> args{DTRAIN_BINARY, "start", "--head", "--port", "0",
                                  "--port-file", home.file("head.address")};
    if (!store_path.empty()) {
      args.push_back("--store");
      args.push_back(store_path);
    }
    process = std::make_unique<child_process>(args, home.file("head.log"));
    address = dtrain::testing::wait_for_file(home.file("head.address"), milliseconds(10000));
    while (!address.empty() && (address.back() == '\n' || address.back() == ' '))
      address.pop_back();
    BOOST_REQUIRE_MESSAGE(!address.empty(), "the head did not start");
  }
  ~head_process() {
    bool stopped = process->stop(SIGTERM, milliseconds(10000));
    BOOST_TEST(stopped, "the head stops on SIGTERM; its log:\n"
                            << dtrain::testing::read_file(home.file("head.log")));
  }
};

std::unique_ptr<cluster> attach(const std::string& address) {
  cluster::options o;
  o.address = address;
  o.connect_timeout = milliseconds(10000);
  auto c = cluster::connect(o);
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  return std::move(*c);
}

} // namespace

BOOST_AUTO_TEST_SUITE(experiment_service)

BOOST_AUTO_TEST_CASE(rows_cross_the_wire_as_they_were_written_non_finite_values_included) {
  system_config config;
  caf::actor_system sys{config};
  std::vector<experiments::metric_row> rows(3);
  rows[0].value = inf;
  rows[1].value = -inf;
  rows[2].value = std::nan("");
  rows[2].time = 4.9e-324;  // the smallest denormal
  rows[2].name = "loss";
  std::vector<char> buffer;
  caf::binary_serializer sink{sys, buffer};
  auto message = caf::make_message(rows);
  BOOST_REQUIRE(!sink(message));
  BOOST_TEST(!buffer.empty());
  caf::message back;
  caf::binary_deserializer source{sys, buffer};
  BOOST_REQUIRE(!source(back));
  BOOST_REQUIRE(back.match_elements<std::vector<experiments::metric_row>>());
  auto read = back.get_as<std::vector<experiments::metric_row>>(0);
  BOOST_REQUIRE(read.size() == 3u);
  BOOST_TEST(read[0].value == inf);
  BOOST_TEST(read[1].value == -inf);
  BOOST_TEST(std::isnan(read[2].value));
  BOOST_TEST(read[2].time == 4.9e-324);
  BOOST_TEST(read[2].name == "loss");
}

BOOST_AUTO_TEST_CASE(an_embedded_cluster_keeps_experiments_through_its_head) {
  auto rows = std::make_shared<memory_store>("test memory");
  auto c = cluster::connect(embedded_with(rows, "/test/experiments.db"));
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  auto s = (*c)->experiments();
  BOOST_REQUIRE_MESSAGE(s.is_ok(), s.error().to_string());
  BOOST_TEST((*s)->where() == "/test/experiments.db");
  BOOST_TEST(((*c)->experiments().value() == *s), "the client is made once");
  auto id = (*s)->create_experiment(an_experiment("first"));
  BOOST_REQUIRE_MESSAGE(id.is_ok(), id.error().to_string());
  write_rows(**s, *id);
  check_rows(**s, *id, "first");
  // The rows are in the store the head opened, not only in the client.
  BOOST_TEST(rows->experiment(*id)->state == "completed");
  BOOST_TEST(rows->metrics(*id, "")->size() == 2u);
  auto all = (*s)->experiments();
  BOOST_REQUIRE(all.is_ok());
  BOOST_TEST(all->size() == 1u);
  BOOST_TEST((*s)->delete_experiment(*id).is_ok());
  auto gone = (*s)->experiment(*id);
  BOOST_REQUIRE(!gone.is_ok());
  BOOST_TEST((gone.error().code() == error_code::not_found));
  BOOST_TEST(gone.error().message().find("experiment store at /test/experiments.db: experiment") !=
                 std::string::npos,
             gone.error().message());
}

BOOST_AUTO_TEST_CASE(a_write_error_comes_back_from_the_next_flush_naming_the_operation) {
  auto rows = std::make_shared<memory_store>("test memory");
  auto c = cluster::connect(embedded_with(rows, "/test/experiments.db")).value();
  auto s = c->experiments().value();
  experiments::trial_row orphan;
  orphan.experiment = 99;
  orphan.id = "00001";
  BOOST_TEST(s->put_trial(orphan).is_ok(), "a write returns at once");
  experiments::metric_row m;
  m.experiment = 98;
  BOOST_TEST(s->add_metrics({m}).is_ok());
  status flushed = s->flush();
  BOOST_REQUIRE(!flushed.is_ok());
  BOOST_TEST((flushed.code() == error_code::not_found));
  // Every experiment's error, the first one first.
  BOOST_TEST(flushed.message() ==
                 "experiment store at /test/experiments.db: put_trial: no experiment 99 in test "
                 "memory; and add_metrics: no experiment 98 in test memory",
             flushed.message());
  BOOST_TEST(s->flush().is_ok(), "the error is returned once");
  // Another client of the same service does not see this one's errors.
  auto other = experiments::service_client(
      c->system(), [&] {
        caf::scoped_actor self{c->system()};
        experiments::experiment_service svc;
        self->request(c->head(), std::chrono::seconds(5), experiments_atom::value, c->session())
            .receive([&](experiments::experiment_service& x) { svc = x; }, [](caf::error&) {});
        return svc;
      }(),
      c->session(), "the test");
  BOOST_TEST(s->put_trial(orphan).is_ok());
  BOOST_TEST(other.flush().is_ok());
  BOOST_TEST(!s->flush().is_ok());
}

// `dtrain experiments delete` of a running experiment: its run's next
// writes fail. They are reported to that run, and the other run writing
// through the same service goes on as if nothing happened.
BOOST_AUTO_TEST_CASE(a_deleted_experiment_s_writer_alone_hears_of_its_failed_writes) {
  temp_dir home;
  const std::string path = home.file("experiments.db");
  system_config config;
  caf::actor_system sys{config};
  // No TLS: every session passes (a plain cluster's service).
  auto service = experiments::spawn_experiment_service(sys, experiments::sqlite_opener(path), path,
                                                       std::make_shared<session_directory>(false));
  {
    experiments::service_client deleted_run(sys, service, "", path),
        other_run(sys, service, "", path);
    const int64_t gone = deleted_run.create_experiment(an_experiment("gone")).value();
    const int64_t kept = other_run.create_experiment(an_experiment("kept")).value();
    experiments::trial_row t;
    t.experiment = gone;
    t.id = "00001";
    BOOST_REQUIRE(deleted_run.put_trial(t).is_ok());
    BOOST_REQUIRE(deleted_run.flush().is_ok());
    BOOST_REQUIRE(other_run.delete_experiment(gone).is_ok());
    t.id = "00002";
    BOOST_TEST(deleted_run.put_trial(t).is_ok(), "a write returns at once");
    BOOST_REQUIRE(deleted_run.trials(kept).is_ok());  // after the failed write, in order

    write_rows(other_run, kept);  // flushes: ok
    check_rows(other_run, kept, "kept");
    const auto created = other_run.create_experiment(an_experiment("new"));
    BOOST_REQUIRE_MESSAGE(created.is_ok(), created.error().to_string());
    BOOST_TEST(other_run.experiment(*created).value().name == "new");

    const status failed = deleted_run.flush();
    BOOST_REQUIRE(!failed.is_ok());
    BOOST_TEST((failed.code() == error_code::not_found), failed.to_string());
    BOOST_TEST(failed.message().find("put_trial for experiment " + std::to_string(gone) +
                                     ": no experiment " + std::to_string(gone)) !=
                   std::string::npos,
               failed.message());
    BOOST_TEST(deleted_run.flush().is_ok(), "the error is returned once");
    BOOST_TEST(other_run.flush().is_ok());
  }
  caf::anon_send_exit(service, caf::exit_reason::user_shutdown);
}

// experiments delete removes the storage directory: a client must not be
// able to point it anywhere else.
BOOST_AUTO_TEST_CASE(an_update_that_changes_an_experiment_s_storage_is_refused) {
  auto rows = std::make_shared<memory_store>("test memory");
  auto c = cluster::connect(embedded_with(rows, "/test/experiments.db")).value();
  auto s = c->experiments().value();
  const int64_t id = s->create_experiment(an_experiment("e")).value();
  auto e = s->experiment(id).value();
  e.storage = "/home/someone/else";
  e.state = "completed";
  BOOST_TEST(s->update_experiment(e).is_ok(), "a write returns at once");
  const status refused = s->flush();
  BOOST_REQUIRE(!refused.is_ok());
  BOOST_TEST((refused.code() == error_code::invalid_argument), refused.to_string());
  BOOST_TEST(refused.message() ==
                 "experiment store at /test/experiments.db: update_experiment: experiment " +
                     std::to_string(id) +
                     ": its storage (the checkpoint directory) cannot change: it is "
                     "'/tmp/nowhere/e', the update says '/home/someone/else'",
             refused.message());
  auto now = rows->experiment(id).value();
  BOOST_TEST(now.storage == "/tmp/nowhere/e");
  BOOST_TEST(now.state == "running", "the refused update changed nothing");

  // Set once, from "" (a new experiment's directory names its id), and
  // updates that keep it pass.
  auto fresh = an_experiment("fresh");
  fresh.storage.clear();
  const int64_t second = s->create_experiment(fresh).value();
  fresh.id = second;
  fresh.storage = "/tmp/nowhere/fresh/" + std::to_string(second);
  BOOST_TEST(s->update_experiment(fresh).is_ok());
  fresh.state = "completed";
  BOOST_TEST(s->update_experiment(fresh).is_ok());
  const status flushed = s->flush();
  BOOST_TEST(flushed.is_ok(), flushed.to_string());
  BOOST_TEST(rows->experiment(second).value().storage == fresh.storage);
  BOOST_TEST(rows->experiment(second).value().state == "completed");
}

BOOST_AUTO_TEST_CASE(a_request_the_service_does_not_answer_in_time_is_a_timeout_naming_it) {
  system_config config;
  caf::actor_system sys{config};
  // The store takes longer to open than the client waits.
  auto slow = experiments::spawn_experiment_service(
      sys,
      []() -> result<std::unique_ptr<experiments::experiment_store>> {
        std::this_thread::sleep_for(milliseconds(1500));
        return std::unique_ptr<experiments::experiment_store>(new memory_store());
      },
      "slow.db", std::make_shared<session_directory>(false));
  {
    experiments::service_client client(sys, slow, "", "slow.db", milliseconds(200));
    auto start = std::chrono::steady_clock::now();
    auto listed = client.experiments();
    auto took = std::chrono::steady_clock::now() - start;
    BOOST_REQUIRE(!listed.is_ok());
    BOOST_TEST((listed.error().code() == error_code::timeout));
    BOOST_TEST(listed.error().message() ==
                   "experiment store at slow.db: experiments: no answer within the timeout",
               listed.error().message());
    BOOST_TEST((took < milliseconds(1000)));
  }
  caf::anon_send_exit(slow, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(a_store_that_cannot_be_opened_fails_each_request_and_the_cluster_runs_on) {
  temp_dir home;
  const std::string path = home.file("experiments.db");
  dtrain::testing::write_file(path, std::string(4096, 'x'));  // not an SQLite database
  cluster::options o;
  o.local_slots = 1;
  o.local_gpus = 0;
  o.store_path = path;
  auto c = cluster::connect(o);
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  auto s = (*c)->experiments().value();
  for (int i = 0; i < 2; ++i) {
    auto listed = s->experiments();
    BOOST_REQUIRE(!listed.is_ok());
    BOOST_TEST_MESSAGE(listed.error().to_string());
    BOOST_TEST(listed.error().message().find(path) != std::string::npos, listed.error().message());
    BOOST_TEST(listed.error().message().find("experiments: ") != std::string::npos);
  }
  BOOST_TEST(s->put_trial(experiments::trial_row{}).is_ok(), "a write returns at once");
  status flushed = s->flush();
  BOOST_REQUIRE(!flushed.is_ok());
  BOOST_TEST(flushed.message().find(": put_trial: ") != std::string::npos, flushed.message());
  BOOST_TEST(flushed.message().find(path) != std::string::npos, flushed.message());
  caf::scoped_actor self{(*c)->system()};
  bool answered = false;
  self->request((*c)->head(), std::chrono::seconds(5), status_atom::value, (*c)->session())
      .receive([&](cluster_status& st) { answered = st.nodes.size() == 1; },
               [](caf::error&) {});
  BOOST_TEST(answered, "the head answers status");
}

BOOST_AUTO_TEST_CASE(an_embedded_cluster_writes_the_sqlite_file_at_its_store_path) {
  temp_dir home;
  const std::string path = home.file("store/experiments.db");
  int64_t id = 0;
  {
    cluster::options o;
    o.local_slots = 1;
    o.local_gpus = 0;
    o.store_path = path;
    auto c = cluster::connect(o).value();
    auto s = c->experiments().value();
    auto created = s->create_experiment(an_experiment("embedded"));
    BOOST_REQUIRE_MESSAGE(created.is_ok(), created.error().to_string());
    id = *created;
    write_rows(*s, id);
  }
  experiments::sqlite_options read_only;
  read_only.read_only = true;
  auto file = experiments::open_sqlite_store(path, read_only);
  BOOST_REQUIRE_MESSAGE(file.is_ok(), file.error().to_string());
  check_rows(**file, id, "embedded");
}

BOOST_AUTO_TEST_CASE(a_driver_writes_through_a_head_process_and_another_reads_it_back) {
  temp_dir home;
  head_process head(home, "");
  int64_t id = 0;
  {
    auto writer = attach(head.address);
    auto s = writer->experiments();
    BOOST_REQUIRE_MESSAGE(s.is_ok(), s.error().to_string());
    BOOST_TEST((*s)->where() == "the head " + head.address);
    auto created = (*s)->create_experiment(an_experiment("through the head"));
    BOOST_REQUIRE_MESSAGE(created.is_ok(), created.error().to_string());
    id = *created;
    write_rows(**s, id);
  }
  auto reader = attach(head.address);
  check_rows(*reader->experiments().value(), id, "through the head");
  BOOST_TEST(std::ifstream(home.file("experiments.db")).good(),
             "the head keeps $DTRAIN_HOME/experiments.db");
}

BOOST_AUTO_TEST_CASE(a_head_process_with_a_corrupt_store_names_it_and_still_answers_status) {
  temp_dir home;
  const std::string path = home.file("broken.db");
  dtrain::testing::write_file(path, std::string(4096, 'x'));
  head_process head(home, path);
  auto driver = attach(head.address);
  auto s = driver->experiments().value();
  auto created = s->create_experiment(an_experiment("never"));
  BOOST_REQUIRE(!created.is_ok());
  BOOST_TEST_MESSAGE(created.error().to_string());
  const std::string& text = created.error().message();
  BOOST_TEST(text.find("experiment store at the head " + head.address + ": create_experiment: ") == 0u,
             text);
  BOOST_TEST(text.find(path) != std::string::npos, text);
  caf::scoped_actor self{driver->system()};
  bool answered = false;
  self->request(driver->head(), std::chrono::seconds(5), status_atom::value, driver->session())
      .receive([&](cluster_status&) { answered = true; }, [](caf::error&) {});
  BOOST_TEST(answered, "the head answers status");
  BOOST_TEST(dtrain::testing::read_file(path) == std::string(4096, 'x'), "the file is left as it was");
}

BOOST_AUTO_TEST_SUITE_END()
