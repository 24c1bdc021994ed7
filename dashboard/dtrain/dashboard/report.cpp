#include "dtrain/dashboard/report.hpp"

#include "dtrain/core/json.hpp"
#include "dtrain/dashboard/api.hpp"
#include "dtrain/dashboard/assets.hpp"
#include "dtrain/experiments/trial_importance.hpp"

namespace dtrain::dashboard {

namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// A file's text made safe inside <script> or <style>: the only sequence
// that ends those elements early is "</"; "<\/" means the same in
// JavaScript strings, which is where the inlined files have it, if at all.
std::string element_text(std::string text) {
  replace_all(text, "</", "<\\/");
  return text;
}

// `<!--dtrain:inline FILE-->` -> the embedded file as <style> or <script>.
result<std::string> inlined(const std::string& file) {
  const asset* a = find_asset("/" + file);
  if (a == nullptr)
    return status(error_code::internal, "the report's page names " + file +
                                            ", which is not embedded in this build");
  const std::string text = element_text(std::string(a->bytes));
  if (file.size() > 4 && file.compare(file.size() - 4, 4, ".css") == 0)
    return "<style>/* " + file + " */\n" + text + "\n</style>";
  return "<script>/* " + file + " */\n" + text + "\n</script>";
}

} // namespace

std::string importance_json(const experiments::experiment_row& e,
                            const std::vector<experiments::trial_row>& trials,
                            tune::importance_method method) {
  tune::importance_options o;
  o.method = method;
  auto found = experiments::importance_of(e, trials, o);
  return found ? experiments::to_json(*found)
               : "{\"error\":" + json::quoted(found.error().message()) + "}";
}

std::string report_json(const report_input& in) {
  std::string out = "{\"trials\":" + trials_json(in.experiment, in.trials) + ",\"metrics\":[";
  for (size_t i = 0; i < in.trials.size(); ++i) {
    static const std::vector<experiments::metric_row> none;
    out += i == 0 ? "" : ",";
    out += metrics_json(in.experiment.id, in.trials[i].id,
                        i < in.metrics.size() ? in.metrics[i] : none, 0);
  }
  out += "],\"best_trial\":";
  const experiments::trial_row* best = best_trial(in.experiment, in.trials);
  out += best ? json::quoted(trial_key(best->experiment, best->id)) : "null";
  out += ",\"importance\":" + importance_json(in.experiment, in.trials);
  out += ",\"configuration\":" + json::quoted(in.experiment.configuration);
  out += ",\"source\":" + json::quoted(in.source);
  out += ",\"generated_at\":" + json_number(in.generated_at) + "}";
  return out;
}

result<std::string> report_html(const report_input& in) {
  const asset* page = find_asset("/report.html");
  if (page == nullptr)
    return status(error_code::internal, "report.html is not embedded in this build");
  std::string html(page->bytes);
  const std::string open = "<!--dtrain:inline ", close = "-->";
  for (size_t at = html.find(open); at != std::string::npos; at = html.find(open, at)) {
    const size_t end = html.find(close, at);
    if (end == std::string::npos)
      break;
    const std::string file = html.substr(at + open.size(), end - at - open.size());
    auto text = inlined(file);
    if (!text)
      return text.error();
    html.replace(at, end + close.size() - at, *text);
    at += text->size();
  }
  // In JSON '<' occurs only inside strings, where \u003c is the same
  // character: no "</script>" or "<!--" in the data can end the element.
  std::string data = report_json(in);
  replace_all(data, "<", "\\u003c");
  replace_all(html, "<!--dtrain:data-->",
              "<script id=\"dtrain-data\" type=\"application/json\">" + data + "</script>");
  return html;
}

} // namespace dtrain::dashboard
