#include "engine/plan/catalog.h"
#include "engine/plan/naturalorder.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/paths.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

namespace engine::plan {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char *kHeaderKey = "tunebench_catalog";

json readCatalogFile(const fs::path &file)
{
    try {
        json document = json::parse(readFile(file));
        if (!document.is_object() || !document.contains(kHeaderKey) || !document.contains("config")
            || !document["config"].is_object())
            throw invalidInput("catalog file " + file.string() + " is not a catalog entry: it needs a \"" + kHeaderKey
                               + "\" header and a \"config\" object");
        return document;
    } catch (const json::exception &e) {
        throw invalidInput("catalog file " + file.string() + " is not valid JSON (" + e.what() + ")");
    }
}

CatalogEntry entryOf(const fs::path &file, const json &document)
{
    try {
        const json &header = document.at(kHeaderKey);
        CatalogEntry e;
        e.name = file.stem().string();
        e.displayName = header.at("display_name").get<std::string>();
        e.repoId = header.at("repo_id").get<std::string>();
        e.parameters = header.at("parameters").get<int64_t>();
        e.parametersPublished = header.value("parameters_published", std::string());
        e.modelType = document.at("config").at("model_type").get<std::string>();
        e.file = file;
        return e;
    } catch (const json::exception &ex) {
        throw invalidInput("catalog file " + file.string() + " lacks a field or has one of the wrong type (" + ex.what()
                           + ")");
    }
}

size_t editDistance(const std::string &a, const std::string &b)
{
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t above = row[j];
            const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// The three names closest to `name`, for the unknown-name message: names that begin with it first (a name typed
// short: "mistral-7b" for mistral-7b-v0.3, not the nearer mixtral-8x7b), then by edit distance.
std::vector<std::string> nearestNames(const std::string &name, const std::vector<CatalogEntry> &entries)
{
    std::vector<std::pair<std::pair<bool, size_t>, std::string>> ranked;
    for (const CatalogEntry &e : entries)
        ranked.push_back({{!e.name.starts_with(name), editDistance(name, e.name)}, e.name});
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto &x, const auto &y) { return x.first < y.first; });
    std::vector<std::string> out;
    for (size_t i = 0; i < ranked.size() && i < 3; ++i)
        out.push_back(ranked[i].second);
    return out;
}

} // namespace

fs::path catalogDir() { return resourcesDir() / "plan-catalog"; }

std::vector<CatalogEntry> listCatalog(const fs::path &dir)
{
    std::vector<CatalogEntry> entries;
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        return entries;
    for (const fs::directory_entry &item : fs::directory_iterator(dir, ec)) {
        if (item.path().extension() == ".json")
            entries.push_back(entryOf(item.path(), readCatalogFile(item.path())));
    }
    // Natural order, so that sizes read in order: qwen2.5-3b, qwen2.5-7b, qwen2.5-14b.
    std::sort(entries.begin(), entries.end(),
              [](const CatalogEntry &a, const CatalogEntry &b) { return naturalLess(a.name, b.name); });
    return entries;
}

std::optional<CatalogEntry> findCatalogEntry(const std::string &name, const fs::path &dir)
{
    // Only a plain file name can be a catalog name ("../x" or "a/b" never are).
    if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos || name[0] == '.')
        return std::nullopt;
    const fs::path file = dir / (name + ".json");
    std::error_code ec;
    if (!fs::is_regular_file(file, ec))
        return std::nullopt;
    return entryOf(file, readCatalogFile(file));
}

PlanModel loadCatalogModel(const std::string &name, const fs::path &dir)
{
    const std::optional<CatalogEntry> entry = findCatalogEntry(name, dir);
    if (!entry) {
        const std::vector<CatalogEntry> entries = listCatalog(dir);
        if (entries.empty())
            throw invalidInput("no catalog model named \"" + name + "\": the catalog " + dir.string() + " is empty or missing");
        std::string nearest;
        for (const std::string &n : nearestNames(name, entries))
            nearest += (nearest.empty() ? "" : ", ") + n;
        throw invalidInput("no catalog model named \"" + name + "\"; nearest: " + nearest + " (the catalog has "
                           + std::to_string(entries.size()) + " models)");
    }
    const json document = readCatalogFile(entry->file);
    return planModelFromConfig(document.at("config"), entry->file.string());
}

ResolvedModel resolvePlanModel(const std::string &pathOrName, const fs::path &dir)
{
    std::error_code ec;
    if (fs::exists(pathOrName, ec))
        return {planModelFromPath(pathOrName), pathOrName, std::nullopt};
    if (std::optional<CatalogEntry> entry = findCatalogEntry(pathOrName, dir))
        return {loadCatalogModel(pathOrName, dir), entry->repoId, std::move(entry)};
    // A path-like name gets planModelFromPath's own "no such file".
    if (pathOrName.find('/') != std::string::npos || pathOrName.ends_with(".json"))
        return {planModelFromPath(pathOrName), pathOrName, std::nullopt};
    try {
        return {loadCatalogModel(pathOrName, dir), pathOrName, std::nullopt};
    } catch (const Error &error) {
        throw invalidInput(pathOrName + ": no such folder or config.json, and " + error.what());
    }
}

} // namespace engine::plan
