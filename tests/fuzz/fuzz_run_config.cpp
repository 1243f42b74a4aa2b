// The run store's stored configuration of a run (RunRecord::configJson), as the Runs page, `runs`
// and --resume read it, with the training settings inside it read through the settings schema;
// and the marker file of a run folder.

#include "engine/store/runfolder.h"
#include "engine/train/settingschema.h"
#include "engine/train/trainingparams.h"
#include "fuzzsupport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    using namespace engine;
    const std::string text(fuzz::asText(data, size));
    fuzz::expectCleanError([&] {
        const store::RunConfig config = store::parseRunConfig(text);
        fuzz::expectCleanError([&] {
            train::TrainingParams params;
            train::readSettingsJson(config.training, train::SettingScope::All, params);
        });
    });
    fuzz::writeScratch(store::kRunMarker, text);
    fuzz::expectCleanError([&] { store::readRunMarker(fuzz::scratchFolder()); });
    return 0;
}
