// Sharded checkpoints: save_pretrained layout, loading, and weight_map entries that must stay
// inside the model folder.

#include "engine/core/error.h"
#include "engine/io/shardindexio.h"
#include "iotestsupport.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

using namespace engine::io;
using testing_support::expectError;

namespace {

std::vector<std::pair<std::string, torch::Tensor>> smallModel()
{
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (int i = 0; i < 5; ++i)
        tensors.emplace_back("layers." + std::to_string(i) + ".weight", torch::full({16, 16}, float(i))); // 1 KiB each
    tensors.emplace_back("norm.weight", torch::ones({16}, torch::kBFloat16));
    return tensors;
}

void writeIndex(const std::filesystem::path &folder, const nlohmann::json &weightMap)
{
    const nlohmann::json index = {{"metadata", {{"total_size", 4}}}, {"weight_map", weightMap}};
    io_test::writeBytes(folder / kSafetensorsIndexName, index.dump());
}

} // namespace

TEST(ShardIndex, WritesShardsAndAnIndexAndLoadsThemBack)
{
    testing_support::TempDir dir("io-shards");
    const auto tensors = smallModel();
    const CheckpointFiles written = writeShardedSafetensors(dir.path(), tensors, 2048);
    ASSERT_EQ(written.shards.size(), 3u);
    EXPECT_EQ(written.shards[0].filename(), "model-00001-of-00003.safetensors");
    EXPECT_EQ(written.shards[2].filename(), "model-00003-of-00003.safetensors");
    EXPECT_FALSE(std::filesystem::exists(dir / kSafetensorsWeightsName));

    const auto index = nlohmann::json::parse(io_test::readBytes(dir / kSafetensorsIndexName));
    EXPECT_EQ(index["metadata"]["total_size"], 5 * 1024 + 32);
    EXPECT_EQ(index["weight_map"]["layers.0.weight"], "model-00001-of-00003.safetensors");
    EXPECT_EQ(index["weight_map"]["norm.weight"], "model-00003-of-00003.safetensors");
    EXPECT_EQ(readSafetensorsHeader(written.shards[0]).metadata.at("format"), "pt");

    const CheckpointFiles located = locateCheckpoint(dir.path());
    EXPECT_EQ(located.shards.size(), 3u);
    EXPECT_EQ(located.totalSize, 5u * 1024 + 32);
    const auto loaded = loadCheckpoint(dir.path());
    ASSERT_EQ(loaded.size(), tensors.size());
    for (const auto &[name, tensor] : tensors)
        EXPECT_TRUE(torch::equal(loaded.at(name), tensor)) << name;

    int visits = 0;
    forEachCheckpointTensor(dir.path(), {.dtype = torch::kDouble}, [&](const std::string &, torch::Tensor tensor) {
        EXPECT_EQ(tensor.scalar_type(), torch::kDouble);
        ++visits;
    });
    EXPECT_EQ(visits, 6);
}

TEST(ShardIndex, SmallCheckpointIsOneFileAndStaleShardsAreRemoved)
{
    testing_support::TempDir dir("io-single");
    writeShardedSafetensors(dir.path(), smallModel(), 2048);
    const CheckpointFiles files = writeShardedSafetensors(dir.path(), smallModel(), 1 << 20);
    ASSERT_EQ(files.shards.size(), 1u);
    EXPECT_FALSE(files.index);
    size_t count = 0;
    for (const auto &entry : std::filesystem::directory_iterator(dir.path())) {
        EXPECT_EQ(entry.path().filename(), kSafetensorsWeightsName);
        ++count;
    }
    EXPECT_EQ(count, 1u);
    EXPECT_EQ(loadCheckpoint(dir.path()).size(), 6u);
}

TEST(ShardIndex, TensorLargerThanTheLimitGetsItsOwnShard)
{
    testing_support::TempDir dir("io-big");
    const CheckpointFiles files = writeShardedSafetensors(
        dir.path(), {{"a", torch::zeros({4})}, {"big", torch::zeros({1000})}, {"b", torch::zeros({4})}}, 100);
    ASSERT_EQ(files.shards.size(), 2u);
    EXPECT_EQ(files.tensorToShard.at("a"), files.tensorToShard.at("b"));
    EXPECT_NE(files.tensorToShard.at("a"), files.tensorToShard.at("big"));
}

TEST(ShardIndex, WeightMapEntriesMustStayInsideTheModelFolder)
{
    testing_support::TempDir dir("io-escape");
    const auto model = dir / "model";
    writeShardedSafetensors(model, smallModel(), 2048);
    const std::string shard = "model-00001-of-00003.safetensors";
    std::filesystem::copy_file(model / shard, dir / "outside.safetensors");
    const auto index = (model / kSafetensorsIndexName).string();

    writeIndex(model, {{"layers.0.weight", "../../etc/passwd"}});
    expectError([&] { locateCheckpoint(model); }, engine::ErrorKind::InvalidInput,
                index + ": weight_map entry 'layers.0.weight' -> '../../etc/passwd' leaves the model folder");
    writeIndex(model, {{"layers.0.weight", "sub/../../outside.safetensors"}});
    expectError([&] { locateCheckpoint(model); }, engine::ErrorKind::InvalidInput, "leaves the model folder");
    writeIndex(model, {{"layers.0.weight", "/etc/passwd"}});
    expectError([&] { locateCheckpoint(model); }, engine::ErrorKind::InvalidInput, "is an absolute path");
    writeIndex(model, {{"layers.0.weight", "model-00009-of-00009.safetensors"}});
    expectError([&] { locateCheckpoint(model); }, engine::ErrorKind::InvalidInput,
                "'model-00009-of-00009.safetensors' names a shard that does not exist");
    std::filesystem::create_symlink(dir / "outside.safetensors", model / "link.safetensors");
    writeIndex(model, {{"layers.0.weight", "link.safetensors"}});
    expectError([&] { locateCheckpoint(model); }, engine::ErrorKind::InvalidInput,
                "through a symbolic link) to " + (std::filesystem::canonical(dir.path()) / "outside.safetensors").string()
                    + ", outside the model folder");
    writeIndex(model, {{"layers.0.weight", 7}});
    expectError([&] { locateCheckpoint(model); }, engine::ErrorKind::InvalidInput, "is 7, not a file name");

    // A symbolic link that stays inside the folder is fine.
    std::filesystem::create_symlink(shard, model / "inner.safetensors");
    writeIndex(model, {{"layers.0.weight", "inner.safetensors"}});
    EXPECT_EQ(loadCheckpoint(model).size(), 1u);
}

// Regression: the Hugging Face hub cache keeps snapshot files as symbolic links into the repo's
// blobs/ (models--org--name/snapshots/<rev>/x -> ../../blobs/<sha>); such folders must load.
TEST(ShardIndex, HubCacheSnapshotLinksIntoBlobsAreAccepted)
{
    testing_support::TempDir dir("io-hub-cache");
    const auto staging = dir / "staging";
    writeShardedSafetensors(staging, smallModel(), 2048);
    const auto repo = dir / "models--org--tiny";
    const auto snapshot = repo / "snapshots" / "0123abcd";
    std::filesystem::create_directories(repo / "blobs");
    std::filesystem::create_directories(snapshot);
    int blob = 0;
    for (const auto &entry : std::filesystem::directory_iterator(staging)) {
        const auto target = repo / "blobs" / ("blob" + std::to_string(blob++));
        std::filesystem::copy_file(entry.path(), target);
        std::filesystem::create_symlink(std::filesystem::path("../../blobs") / target.filename(),
                                        snapshot / entry.path().filename());
    }
    EXPECT_EQ(loadCheckpoint(snapshot).size(), smallModel().size());

    // A link out of the repo altogether is still refused.
    std::filesystem::copy_file(staging / "model-00001-of-00003.safetensors", dir / "elsewhere.safetensors");
    std::filesystem::remove(snapshot / "model-00001-of-00003.safetensors");
    std::filesystem::create_symlink(dir / "elsewhere.safetensors", snapshot / "model-00001-of-00003.safetensors");
    expectError([&] { locateCheckpoint(snapshot); }, engine::ErrorKind::InvalidInput, "outside the model folder");
}

TEST(ShardIndex, TensorListedInTheIndexMustBeInItsShard)
{
    testing_support::TempDir dir("io-missing-tensor");
    writeShardedSafetensors(dir.path(), smallModel(), 2048);
    writeIndex(dir.path(), {{"layers.0.weight", "model-00001-of-00003.safetensors"},
                            {"layers.4.weight", "model-00001-of-00003.safetensors"}});
    expectError([&] { loadCheckpoint(dir.path()); }, engine::ErrorKind::InvalidInput,
                "lists tensor 'layers.4.weight' in shard model-00001-of-00003.safetensors, but that shard has no such tensor");
}

TEST(ShardIndex, BrokenIndexOrNoWeightsAreClearErrors)
{
    testing_support::TempDir dir("io-broken-index");
    expectError([&] { locateCheckpoint(dir.path()); }, engine::ErrorKind::InvalidInput,
                "has neither model.safetensors nor model.safetensors.index.json");
    io_test::writeBytes(dir / kSafetensorsIndexName, "{\"weight_map\": ");
    expectError([&] { locateCheckpoint(dir.path()); }, engine::ErrorKind::InvalidInput, "index.json: not valid JSON");
    io_test::writeBytes(dir / kSafetensorsIndexName, "{\"metadata\": {}}");
    expectError([&] { locateCheckpoint(dir.path()); }, engine::ErrorKind::InvalidInput, "has no \"weight_map\" object");
    expectError([&] { locateCheckpoint(dir / "nope"); }, engine::ErrorKind::InvalidInput, "not a folder");
}
