#pragma once
// The catalog of well-known models shipped with tunebench (resources/plan-catalog/): one JSON file per
// model holding its published config.json and a small header of ours, so that a newcomer plans Llama,
// Qwen2.5, Mistral, ChatGLM or GPT-2 without downloading anything. Torch-free.
//
// How to use:
//   for (const CatalogEntry &e : listCatalog()) e.name, e.repoId, e.parameters ...;
//   PlanModel model = loadCatalogModel("llama-3.1-8b");     // as planModelFromPath on a folder
//
// A file is {"tunebench_catalog": {"display_name", "repo_id", "parameters", "parameters_published"},
//            "config": {...the model's config.json...}}; the file's stem is the entry's name.

#include "engine/plan/planmodel.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace engine::plan {

/// One catalog model, as its file's header describes it.
struct CatalogEntry {
    std::string name;        ///< the file's stem, what --model takes: "llama-3.1-8b"
    std::string displayName; ///< "Llama 3.1 8B"
    std::string repoId;      ///< the Hugging Face repo the config comes from: "meta-llama/Llama-3.1-8B"
    std::string modelType;   ///< config.json's model_type
    int64_t parameters = 0;  ///< the published parameter count (rounded as published)
    std::string parametersPublished; ///< as written by the publisher: "8.03B"
    std::filesystem::path file;
};

/// resourcesDir()/plan-catalog.
std::filesystem::path catalogDir();

/// Every entry of `dir`, in natural name order ("qwen2.5-3b" before "qwen2.5-14b"). Throws
/// Error(InvalidInput) naming a file that is not valid JSON or lacks a field. A missing folder is an
/// empty catalog.
std::vector<CatalogEntry> listCatalog(const std::filesystem::path &dir = catalogDir());

/// The entry called `name`, or nothing.
std::optional<CatalogEntry> findCatalogEntry(const std::string &name, const std::filesystem::path &dir = catalogDir());

/// Plans the catalog model `name` from its config (no weights). An unknown name throws
/// Error(InvalidInput) naming it and the nearest names of the catalog.
PlanModel loadCatalogModel(const std::string &name, const std::filesystem::path &dir = catalogDir());

/// A model as `tunebench plan --model` and the Plan page's model field take it.
struct ResolvedModel {
    PlanModel model;
    std::string loaderName;           ///< what from_pretrained should load: the path, or the catalog's repo id
    std::optional<CatalogEntry> entry; ///< set when it came from the catalog
};

/// `pathOrName` is a folder or config.json when one of that name exists (so an existing folder keeps
/// its meaning), else a catalog name. Throws Error(InvalidInput) saying it is neither, with the
/// nearest catalog names.
ResolvedModel resolvePlanModel(const std::string &pathOrName, const std::filesystem::path &dir = catalogDir());

} // namespace engine::plan
