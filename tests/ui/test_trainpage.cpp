// The Train page driven like a user: validation as you type, presets, "copy as CLI command" read back by
// the real CLI parser, a stored run's config cloned into the form, generation after a tiny run, and a
// model folder dropped on the page.

#include "bridge/enginebridge.h"
#include "app/cli/command.h"
#include "engine/core/paths.h"
#include "engine/core/threads.h"
#include "engine/store/runstore.h"
#include "engine/train/trainer.h"
#include "ui/pages/trainpage.h"
#include "ui/pages/trainsettingsform.h"
#include "uitestsupport.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDropEvent>
#include <QFile>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QUrl>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <vector>

namespace {

constexpr int kJobTimeoutMs = 240'000;

class TrainPageTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_TRUE(m_dir.isValid());
        QSettings().remove(QStringLiteral("TrainPage")); // every test starts from the page's defaults
        m_bridge = std::make_unique<bridge::EngineBridge>();
        m_page = std::make_unique<ui::TrainPage>(*m_bridge, m_dir.filePath(QStringLiteral("runs.sqlite3")));
        m_page->resize(1100, 800);
        m_page->show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(m_page.get()));
    }

    void TearDown() override
    {
        m_page.reset();
        m_bridge.reset();
        QSettings().remove(QStringLiteral("TrainPage"));
    }

    template<typename T>
    T *child(const char *name)
    {
        T *widget = m_page->findChild<T *>(QString::fromLatin1(name));
        EXPECT_NE(widget, nullptr) << "no widget named " << name;
        return widget;
    }

    /// Shows the settings tab that holds `field`, as a user would click it.
    void showTabOf(QWidget *field)
    {
        auto *tabs = child<QTabWidget>("settingsTabs");
        for (int i = 0; i < tabs->count(); ++i) {
            if (tabs->widget(i)->isAncestorOf(field)) {
                QTest::mouseClick(tabs->tabBar(), Qt::LeftButton, {}, tabs->tabBar()->tabRect(i).center());
                ASSERT_EQ(tabs->currentIndex(), i);
                return;
            }
        }
        FAIL() << "no tab holds " << field->objectName().toStdString();
    }

    /// Replaces a spin box's or line edit's text by typing, key by key.
    void typeInto(QWidget *field, const QString &text)
    {
        showTabOf(field);
        field->setFocus();
        QTest::keyClick(field, Qt::Key_A, Qt::ControlModifier);
        QTest::keyClick(field, Qt::Key_Delete);
        QTest::keyClicks(field, text);
    }

    void click(const char *button)
    {
        auto *b = child<QPushButton>(button);
        ASSERT_NE(b, nullptr);
        ASSERT_TRUE(b->isEnabled()) << button << " is disabled: " << m_page->form()->problem().toStdString();
        QTest::mouseClick(b, Qt::LeftButton);
    }

    bool waitForIdle(int timeoutMs = kJobTimeoutMs)
    {
        return QTest::qWaitFor([this] { return !m_bridge->isBusy(); }, timeoutMs);
    }

    QString logText() { return child<QPlainTextEdit>("logView")->toPlainText(); }

    /// Whether the field shows as refused: its base colour turned towards red.
    static bool looksInvalid(QWidget *field)
    {
        const QColor base = field->palette().color(QPalette::Base);
        const QColor normal = field->parentWidget()->palette().color(QPalette::Base);
        return field->property("invalid").toBool() && base != normal && base.red() > base.green() && base.red() > base.blue();
    }

    QTemporaryDir m_dir;
    std::unique_ptr<bridge::EngineBridge> m_bridge;
    std::unique_ptr<ui::TrainPage> m_page;
};

TEST_F(TrainPageTest, TypingAnInvalidValueDisablesStartAndNamesTheField)
{
    auto *start = child<QPushButton>("startButton");
    auto *message = child<QLabel>("validationLabel");
    ASSERT_TRUE(m_page->settingsValid()) << m_page->form()->problem().toStdString();
    EXPECT_TRUE(start->isEnabled());
    EXPECT_FALSE(message->isVisible());

    // More threads than this machine has cores.
    auto *threads = child<QSpinBox>("threads");
    const int tooMany = engine::hardwareThreads() + 1;
    typeInto(threads, QString::number(tooMany));
    EXPECT_EQ(threads->value(), tooMany);
    EXPECT_FALSE(start->isEnabled());
    EXPECT_FALSE(child<QPushButton>("previewButton")->isEnabled());
    ASSERT_TRUE(message->isVisible());
    EXPECT_TRUE(message->text().startsWith(QStringLiteral("Threads: "))) << message->text().toStdString();
    EXPECT_TRUE(message->text().contains(QStringLiteral("threads = %1").arg(tooMany))) << message->text().toStdString();
    EXPECT_TRUE(looksInvalid(threads));
    EXPECT_EQ(m_page->form()->problemField(), threads);
    EXPECT_FALSE(m_page->start()) << "start() refuses too";
    EXPECT_FALSE(m_bridge->isBusy());

    typeInto(threads, QStringLiteral("1"));
    EXPECT_TRUE(start->isEnabled()) << message->text().toStdString();
    EXPECT_FALSE(message->isVisible());
    EXPECT_FALSE(looksInvalid(threads));

    // A learning rate of 0, typed into the Basics tab.
    auto *lr = child<QDoubleSpinBox>("learning_rate");
    typeInto(lr, QStringLiteral("0"));
    EXPECT_FALSE(start->isEnabled());
    EXPECT_TRUE(message->text().startsWith(QStringLiteral("Learning rate: "))) << message->text().toStdString();
    EXPECT_TRUE(looksInvalid(lr));
    typeInto(lr, QStringLiteral("2e-4"));
    EXPECT_DOUBLE_EQ(lr->value(), 2e-4);
    EXPECT_TRUE(start->isEnabled()) << message->text().toStdString();

    // Warmup longer than the run: the message names the warmup even when the steps are what changed.
    auto *warmup = child<QSpinBox>("warmup_steps");
    typeInto(warmup, QStringLiteral("50"));
    typeInto(child<QSpinBox>("steps"), QStringLiteral("20"));
    EXPECT_FALSE(start->isEnabled());
    EXPECT_TRUE(message->text().startsWith(QStringLiteral("Warmup steps: "))) << message->text().toStdString();
    EXPECT_TRUE(looksInvalid(warmup));
    typeInto(child<QSpinBox>("steps"), QStringLiteral("200"));
    EXPECT_TRUE(start->isEnabled()) << message->text().toStdString();

    // A data file that does not exist.
    const QString missing = m_dir.filePath(QStringLiteral("no-such-data.txt"));
    auto *corpus = child<QLineEdit>("data");
    typeInto(corpus, missing);
    EXPECT_FALSE(start->isEnabled());
    EXPECT_TRUE(message->text().startsWith(QStringLiteral("Data: "))) << message->text().toStdString();
    EXPECT_TRUE(message->text().contains(QStringLiteral("does not exist"))) << message->text().toStdString();
    EXPECT_TRUE(looksInvalid(corpus));
    typeInto(corpus, uitest::smallCorpus());
    EXPECT_TRUE(start->isEnabled()) << message->text().toStdString();
}

// An error the engine finds only when the job runs names its setting too (engine::Error::field()):
// LoRA targets that match no module of the model mark the LoRA targets field, as a refused value is
// marked, and Start waits for an edit.
TEST_F(TrainPageTest, AJobErrorAboutASettingMarksThatField)
{
    child<QLineEdit>("model")->setText(QString::fromStdString(engine::demoBaseModelPath().string()));
    child<QLineEdit>("data")->setText(uitest::smallCorpus());
    child<QComboBox>("method")->setCurrentIndex(child<QComboBox>("method")->findData(QStringLiteral("lora")));
    auto *targets = child<QLineEdit>("lora.target_modules");
    ASSERT_TRUE(targets->isEnabled());
    targets->setText(QStringLiteral("query_key_value"));
    child<QSpinBox>("steps")->setValue(2);
    ASSERT_TRUE(m_page->settingsValid()) << m_page->form()->problem().toStdString();
    click("startButton");
    ASSERT_TRUE(waitForIdle());
    EXPECT_EQ(m_page->stateText(), QStringLiteral("Failed"));
    EXPECT_EQ(m_page->form()->problemField(), targets);
    EXPECT_TRUE(looksInvalid(targets));
    EXPECT_TRUE(m_page->form()->problem().startsWith(QStringLiteral("LoRA targets: "))) << m_page->form()->problem().toStdString();
    EXPECT_TRUE(m_page->form()->problem().contains(QStringLiteral("match no module of the model")))
        << m_page->form()->problem().toStdString();
    EXPECT_FALSE(child<QPushButton>("startButton")->isEnabled());
    // Fixing the field clears the mark.
    targets->setText(QStringLiteral("q_proj,v_proj"));
    EXPECT_TRUE(m_page->settingsValid()) << m_page->form()->problem().toStdString();
    EXPECT_FALSE(looksInvalid(targets));
}

TEST_F(TrainPageTest, PresetsFillTheFieldsAndAUserPresetIsKept)
{
    auto *combo = child<QComboBox>("presetCombo");
    auto *steps = child<QSpinBox>("steps");
    auto *method = child<QComboBox>("method");
    const QString model = QString::fromStdString(engine::demoBaseModelPath().string());
    child<QLineEdit>("model")->setText(model);
    steps->setValue(777);

    // The user picks "Quick LoRA test" with the keyboard.
    const int quick = combo->findText(QStringLiteral("Quick LoRA test"));
    ASSERT_GT(quick, 0);
    combo->setFocus();
    for (int key = 0; key < quick && combo->currentIndex() < quick; ++key)
        QTest::keyClick(combo, Qt::Key_Down);
    ASSERT_EQ(combo->currentIndex(), quick);
    EXPECT_EQ(steps->value(), 20);
    EXPECT_EQ(method->currentData().toString(), QStringLiteral("lora"));
    EXPECT_EQ(child<QSpinBox>("lora.r")->value(), 8);
    EXPECT_EQ(child<QSpinBox>("sequence_length")->value(), 64);
    EXPECT_EQ(child<QLineEdit>("model")->text(), model) << "a preset keeps the model";
    EXPECT_TRUE(child<QSpinBox>("lora.r")->isEnabled());

    ASSERT_TRUE(m_page->form()->applyPreset(QStringLiteral("Full fine-tune")));
    EXPECT_EQ(method->currentData().toString(), QStringLiteral("full"));
    EXPECT_DOUBLE_EQ(child<QDoubleSpinBox>("learning_rate")->value(), 2e-5);
    EXPECT_FALSE(child<QSpinBox>("lora.r")->isEnabled());

    // "Save Preset…" asks for a name.
    steps->setValue(123);
    child<QDoubleSpinBox>("weight_decay")->setValue(0.03);
    QTimer::singleShot(0, [] {
        auto *dialog = qobject_cast<QInputDialog *>(QApplication::activeModalWidget());
        ASSERT_NE(dialog, nullptr);
        dialog->setTextValue(QStringLiteral("My settings"));
        dialog->accept();
    });
    click("savePresetButton");
    ASSERT_TRUE(m_page->form()->presetNames().contains(QStringLiteral("My settings")));

    ASSERT_TRUE(m_page->form()->applyPreset(QStringLiteral("Quick LoRA test")));
    EXPECT_EQ(steps->value(), 20);
    // A new session lists it, and it fills the fields it saved.
    m_page.reset();
    m_page = std::make_unique<ui::TrainPage>(*m_bridge, m_dir.filePath(QStringLiteral("runs.sqlite3")));
    ASSERT_TRUE(m_page->form()->presetNames().contains(QStringLiteral("My settings")));
    ASSERT_TRUE(m_page->form()->applyPreset(QStringLiteral("My settings")));
    EXPECT_EQ(child<QSpinBox>("steps")->value(), 123);
    EXPECT_DOUBLE_EQ(child<QDoubleSpinBox>("weight_decay")->value(), 0.03);
    EXPECT_EQ(child<QComboBox>("method")->currentData().toString(), QStringLiteral("full"));

    QString error;
    EXPECT_FALSE(m_page->form()->savePreset(QStringLiteral("LoRA"), &error)) << "a built-in's name is taken";
    EXPECT_TRUE(error.contains(QStringLiteral("built-in"))) << error.toStdString();
    EXPECT_TRUE(m_page->form()->deletePreset(QStringLiteral("My settings")));
    EXPECT_FALSE(m_page->form()->presetNames().contains(QStringLiteral("My settings")));
}

/// The words a POSIX shell reads from `command` (the clipboard's text), by letting /bin/sh read them.
QStringList shellWords(const QString &command)
{
    QProcess shell;
    // "tunebench" becomes printf, which prints each word the shell passes it, NUL-terminated.
    const QString script = QStringLiteral("printf '%s\\0' ") + command.section(QLatin1Char(' '), 1);
    shell.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), script});
    if (!shell.waitForFinished(10'000) || shell.exitCode() != 0)
        return {};
    QStringList words{command.section(QLatin1Char(' '), 0, 0)};
    for (const QByteArray &word : shell.readAllStandardOutput().split('\0')) {
        if (!word.isEmpty())
            words << QString::fromUtf8(word);
    }
    return words;
}

TEST_F(TrainPageTest, CopyAsCliCommandIsWhatTheTrainCommandParses)
{
    const QString corpus = uitest::smallCorpus();
    const QString evalData = uitest::smallCorpus(20 * 1024);
    ASSERT_FALSE(corpus.isEmpty());
    const QString base = QString::fromStdString(engine::demoBaseModelPath().string());
    auto *form = m_page->form();
    engine::train::TrainingParams p = form->params();
    // Every setting away from its default, with the characters a shell cares about in the texts.
    p.runName = "it's a \"test\" run";
    p.modelPath = base.toStdString();
    p.dataPath = corpus.toStdString();
    p.tokenizerPath = (base + QStringLiteral("/tokenizer.model")).toStdString();
    p.outputDir = m_dir.filePath(QStringLiteral("out put")).toStdString();
    p.steps = 42;
    p.learningRate = 0.0021;
    p.warmupSteps = 5;
    p.minLearningRateRatio = 0.2;
    p.batchSize = 3;
    p.sequenceLength = 48;
    p.weightDecay = 0.05;
    p.gradClipNorm = 0.5;
    p.threads = 1;
    p.seed = 99;
    p.saveModel = false;
    p.method = engine::train::TrainingMethod::Lora;
    p.lora.r = 4;
    p.lora.alpha = 8;
    p.lora.dropout = 0.1;
    p.lora.setTargetsFromText("q_proj,k_proj");
    p.lora.rslora = true;
    p.lora.modulesToSave = {"lm_head"};
    p.optimizer = engine::train::OptimizerKind::Sgd;
    p.momentum = 0.8;
    p.schedule = engine::train::ScheduleKind::Linear;
    p.epochs = 2;
    p.gradAccumulation = 2;
    p.precision = engine::train::Precision::Bf16;
    p.gradientCheckpointing = true;
    p.evalDataPath = evalData.toStdString();
    p.valFraction = 0;
    p.evalEvery = 5;
    p.evalBatches = 3;
    p.saveEvery = 10;
    p.keepCheckpoints = 2;
    p.samplePrompt = "Call me $HOME";
    p.sampleTokens = 12;
    p.skipBadLines = true;
    p.nonFinite = engine::train::NonFinitePolicy::Skip;
    form->setParams(p);
    ASSERT_TRUE(m_page->settingsValid()) << form->problem().toStdString();
    p = m_page->params(); // as the page reads it back (with its run database)

    QGuiApplication::clipboard()->clear();
    click("copyCliButton");
    const QString copied = QGuiApplication::clipboard()->text();
    ASSERT_EQ(copied, m_page->commandLine());
    ASSERT_TRUE(copied.startsWith(QStringLiteral("tunebench "))) << copied.toStdString();
    const QStringList words = shellWords(copied);
    ASSERT_EQ(words, m_page->commandLineWords()) << copied.toStdString();

    // The real `tunebench train` parser takes every word.
    CLI::App cli;
    cli.fallthrough();
    cli.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app::cli::GlobalOptions globals;
    cli.add_option("--db", globals.storePath);
    std::unique_ptr<app::cli::Command> train = app::cli::makeTrainCommand(cli, globals);
    std::vector<std::string> args;
    for (qsizetype i = words.size() - 1; i >= 1; --i) // CLI11 takes them in reverse, without the program
        args.push_back(words[i].toStdString());
    try {
        cli.parse(args);
    } catch (const CLI::ParseError &e) {
        FAIL() << "the CLI refuses the command: " << e.what() << "\n" << copied.toStdString();
    }
    ASSERT_TRUE(train->subcommand()->parsed());
    EXPECT_EQ(globals.storePath, p.storePath);

    CLI::App *sub = train->subcommand();
    auto text = [&](const char *flag) {
        const CLI::Option *option = sub->get_option(flag);
        EXPECT_EQ(option->count(), 1u) << flag << " is missing from " << copied.toStdString();
        return option->count() ? option->as<std::string>() : std::string();
    };
    auto integer = [&](const char *flag) { return std::stoll(text(flag)); };
    auto number = [&](const char *flag) { return std::stod(text(flag)); };
    auto flag = [&](const char *name) { return sub->get_option(name)->count() == 1; };
    EXPECT_EQ(text("--name"), p.runName);
    EXPECT_EQ(text("--model"), p.modelPath);
    EXPECT_EQ(text("--data"), p.dataPath);
    EXPECT_EQ(text("--tokenizer"), p.tokenizerPath);
    EXPECT_EQ(text("--output"), p.outputDir);
    EXPECT_EQ(integer("--steps"), p.steps);
    EXPECT_EQ(number("--lr"), p.learningRate);
    EXPECT_EQ(integer("--warmup"), p.warmupSteps);
    EXPECT_EQ(number("--min-lr-ratio"), p.minLearningRateRatio);
    EXPECT_EQ(integer("--batch-size"), p.batchSize);
    EXPECT_EQ(integer("--seq-len"), p.sequenceLength);
    EXPECT_EQ(number("--weight-decay"), p.weightDecay);
    EXPECT_EQ(number("--grad-clip"), p.gradClipNorm);
    EXPECT_EQ(integer("--threads"), p.threads);
    EXPECT_EQ(static_cast<uint64_t>(integer("--seed")), p.seed);
    EXPECT_TRUE(flag("--no-save"));
    EXPECT_EQ(text("--method"), "lora");
    EXPECT_EQ(integer("--lora-r"), p.lora.r);
    EXPECT_EQ(number("--lora-alpha"), p.lora.alpha);
    EXPECT_EQ(number("--lora-dropout"), p.lora.dropout);
    EXPECT_EQ(text("--lora-targets"), "q_proj,k_proj");
    EXPECT_TRUE(flag("--rslora"));
    EXPECT_EQ(text("--modules-to-save"), "lm_head");
    EXPECT_EQ(text("--optimizer"), "sgd");
    EXPECT_EQ(number("--momentum"), 0.8);
    EXPECT_EQ(text("--schedule"), "linear");
    EXPECT_EQ(integer("--epochs"), p.epochs);
    EXPECT_EQ(integer("--grad-accum"), p.gradAccumulation);
    EXPECT_EQ(text("--precision"), "bf16");
    EXPECT_TRUE(flag("--checkpointing"));
    EXPECT_EQ(text("--eval-data"), p.evalDataPath);
    EXPECT_EQ(integer("--eval-every"), p.evalEvery);
    EXPECT_EQ(integer("--eval-batches"), p.evalBatches);
    EXPECT_EQ(integer("--save-every"), p.saveEvery);
    EXPECT_EQ(integer("--keep"), p.keepCheckpoints);
    EXPECT_EQ(text("--sample"), p.samplePrompt);
    EXPECT_EQ(integer("--sample-tokens"), p.sampleTokens);
    EXPECT_EQ(text("--bad-lines"), "skip");
    EXPECT_EQ(text("--on-nan"), "skip");
    // Settings at their defaults stay out of the command.
    EXPECT_EQ(sub->get_option("--device")->count(), 0u);
    EXPECT_EQ(sub->get_option("--val-fraction")->count(), 0u);
    EXPECT_EQ(sub->get_option("--device-map")->count(), 0u);
}

TEST_F(TrainPageTest, DroppingAModelFolderSetsTheModel)
{
    QTemporaryDir model;
    ASSERT_TRUE(model.isValid());
    QMimeData mimeData;
    QMimeData *mime = &mimeData;
    mime->setUrls({QUrl::fromLocalFile(model.path())});
    const QPoint where = m_page->rect().center();
    QDragEnterEvent enter(where, Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_page.get(), &enter);
    EXPECT_TRUE(enter.isAccepted());
    QDropEvent drop(QPointF(where), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_page.get(), &drop);
    EXPECT_TRUE(drop.isAccepted());
    EXPECT_EQ(QDir::fromNativeSeparators(child<QLineEdit>("model")->text()), model.path());
    EXPECT_EQ(m_page->form()->recentModels().value(0), model.path());

    // A file that is not a model folder is refused.
    QFile text(model.filePath(QStringLiteral("notes.txt")));
    ASSERT_TRUE(text.open(QIODevice::WriteOnly));
    text.close();
    mime->setUrls({QUrl::fromLocalFile(text.fileName())});
    QDragEnterEvent refused(where, Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_page.get(), &refused);
    EXPECT_FALSE(refused.isAccepted());
}

TEST_F(TrainPageTest, RecentModelsKeepTheLastEight)
{
    QTemporaryDir root;
    ASSERT_TRUE(root.isValid());
    QStringList folders;
    for (int i = 0; i < ui::TrainSettingsForm::kRecentModels + 2; ++i) {
        folders << root.filePath(QStringLiteral("model-%1").arg(i));
        ASSERT_TRUE(QDir().mkpath(folders.back()));
        m_page->setModelPath(folders.back());
    }
    QStringList newestFirst(folders.rbegin(), folders.rend());
    newestFirst = newestFirst.mid(0, ui::TrainSettingsForm::kRecentModels);
    EXPECT_EQ(m_page->form()->recentModels(), newestFirst);
    m_page->setModelPath(folders[5]); // used again: first, not twice
    EXPECT_EQ(m_page->form()->recentModels().value(0), folders[5]);
    EXPECT_EQ(m_page->form()->recentModels().count(folders[5]), 1);
    // Kept for the next session.
    ui::TrainSettingsForm next;
    EXPECT_EQ(next.recentModels(), m_page->form()->recentModels());
}

TEST_F(TrainPageTest, AfterATinyRunGenerateGivesTextAndTheStoredConfigClonesBack)
{
    const QString base = QString::fromStdString(engine::demoBaseModelPath().string());
    auto *form = m_page->form();
    engine::train::TrainingParams p = form->params();
    p.modelPath = base.toStdString();
    p.dataPath = uitest::smallCorpus(20 * 1024).toStdString();
    p.method = engine::train::TrainingMethod::Lora;
    p.lora.r = 4;
    p.lora.alpha = 8;
    p.lora.setTargetsFromText("q_proj,v_proj");
    p.steps = 3;
    p.warmupSteps = 1;
    p.learningRate = 0.002;
    p.batchSize = 2;
    p.sequenceLength = 32;
    p.threads = std::min(2, engine::hardwareThreads());
    p.seed = 7;
    p.valFraction = 0;
    p.evalEvery = 0;
    p.schedule = engine::train::ScheduleKind::Linear;
    p.weightDecay = 0.02;
    p.evalBatches = 2;   // stored with the run and cloned, like every other setting
    p.sampleTokens = 9;
    p.momentum = 0.7;
    form->setParams(p);
    const engine::train::TrainingParams trained = m_page->params();
    ASSERT_EQ(trained.evalBatches, 2);
    ASSERT_EQ(trained.sampleTokens, 9);

    auto *generateButton = child<QPushButton>("generateButton");
    EXPECT_FALSE(generateButton->isEnabled()) << "nothing to generate with before a run";
    click("startButton");
    ASSERT_TRUE(m_bridge->isBusy()) << logText().toStdString();
    ASSERT_TRUE(waitForIdle());
    ASSERT_EQ(m_page->stateText(), QStringLiteral("Succeeded")) << logText().toStdString();

    // Generate with the run's adapter on its base.
    auto *prompt = child<QLineEdit>("generatePromptEdit");
    prompt->clear();
    QTest::keyClicks(prompt, QStringLiteral("Call me"));
    child<QSpinBox>("generateTokensSpin")->setValue(8);
    click("generateButton");
    ASSERT_TRUE(waitForIdle(60'000));
    const QString output = child<QPlainTextEdit>("generateOutput")->toPlainText();
    EXPECT_TRUE(output.startsWith(QStringLiteral("Call me"))) << output.toStdString();
    EXPECT_GT(output.size(), QStringLiteral("Call me").size()) << output.toStdString();
    EXPECT_FALSE(output.contains(QStringLiteral("Cannot generate"))) << output.toStdString();
    EXPECT_TRUE(child<QLabel>("generateModelLabel")->text().contains(QStringLiteral("adapter")));

    // The run's stored config, cloned into a form that shows other settings now, gives the run's settings.
    auto store = engine::store::RunStore::open(trained.storePath);
    const std::vector<engine::store::RunRecord> runs = store.listRuns();
    ASSERT_EQ(runs.size(), 1u);
    ASSERT_TRUE(form->applyPreset(QStringLiteral("Full fine-tune")));
    form->setCorpusPath({});
    ASSERT_NE(m_page->params().toJson(), trained.toJson());
    ASSERT_TRUE(m_page->applyRunConfig(QString::fromStdString(runs[0].configJson)));
    EXPECT_EQ(m_page->params().toJson(), trained.toJson()) << runs[0].configJson;
    EXPECT_TRUE(m_page->settingsValid()) << form->problem().toStdString();

    // A config that is not one says so and changes nothing.
    const auto before = m_page->params().toJson();
    EXPECT_FALSE(m_page->applyRunConfig(QStringLiteral("{\"training\": {\"steps\": \"many\"}}")));
    EXPECT_TRUE(logText().contains(QStringLiteral("\"steps\" must be an integer"))) << logText().toStdString();
    EXPECT_EQ(m_page->params().toJson(), before);
}

} // namespace

namespace {

// Saves a picture of the page with each settings tab shown (and one refused value) when
// TUNEBENCH_TRAINPAGE_SHOTS names a folder: for looking at the layout.
TEST_F(TrainPageTest, PicturesOfEachTab)
{
    const QString folder = qEnvironmentVariable("TUNEBENCH_TRAINPAGE_SHOTS");
    if (folder.isEmpty())
        GTEST_SKIP() << "set TUNEBENCH_TRAINPAGE_SHOTS=folder to save a picture of each settings tab";
    ASSERT_TRUE(QDir().mkpath(folder));
    m_page->resize(1140, 760);
    typeInto(child<QSpinBox>("warmup_steps"), QStringLiteral("5000"));
    auto *tabs = child<QTabWidget>("settingsTabs");
    for (int i = 0; i < tabs->count(); ++i) {
        tabs->setCurrentIndex(i);
        const QString path = QDir(folder).filePath(QStringLiteral("trainpage-tab%1.png").arg(i));
        ASSERT_TRUE(m_page->grab().save(path, "PNG")) << path.toStdString();
    }
}

} // namespace
