// Reading training settings from JSON text (a preset, a stored run's config, the form kept between
// sessions): what a stranger's text gets.

#include "bridge/runconfig.h"

#include <gtest/gtest.h>

#include <string>

using engine::train::SettingScope;
using engine::train::TrainingParams;

TEST(RunConfig, ReadsAStoredRunsTrainingObject)
{
    TrainingParams base;
    TrainingParams out;
    QString error;
    ASSERT_TRUE(bridge::readTrainingSettings(QStringLiteral(R"({"training": {"batch_size": 3}})"), SettingScope::All, base,
                                             &out, &error))
        << error.toStdString();
    EXPECT_EQ(out.batchSize, 3);
    EXPECT_NE(base.batchSize, 3);
}

// Nested brackets deep enough to overflow the stack where a copy or dump() recurses are refused by the
// limit's name before anything is parsed, not crashed on.
TEST(RunConfig, RefusesSettingsNestedTooDeeplyByTheLimit)
{
    const std::string deep = R"({"training": {"lora_targets": )" + std::string(100000, '[') + std::string(100000, ']') + "}}";
    TrainingParams out;
    QString error;
    EXPECT_FALSE(bridge::readTrainingSettings(QString::fromStdString(deep), SettingScope::All, {}, &out, &error));
    EXPECT_TRUE(error.contains(QStringLiteral("the settings: JSON nests deeper than 256 levels"))) << error.toStdString();
}

TEST(RunConfig, NamesTextThatIsNotJson)
{
    TrainingParams out;
    QString error;
    EXPECT_FALSE(bridge::readTrainingSettings(QStringLiteral("{\"training\": "), SettingScope::All, {}, &out, &error));
    EXPECT_TRUE(error.startsWith(QStringLiteral("the settings are not valid JSON"))) << error.toStdString();
}
