// The Plan page driven like a user: open ChatGLM-6B's config, plan LoRA on two T4s and 13 GiB of
// RAM, drag a layer to the CPU, see the bars change, undo.

#include "ui/mainwindow.h"
#include "ui/models/moduletreemodel.h"
#include "ui/pages/planpage.h"
#include "ui/widgets/devicecolumns.h"

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QStyle>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>
#include <QUndoStack>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

namespace {

const QString kChatGlm = QStringLiteral(TUNEBENCH_TEST_DATA "/model/configs/chatglm-6b.json");

/// Index of the column with id `device` in the widget's data, or -1.
int columnOf(const ui::DeviceColumnsWidget &columns, const QString &device)
{
    const auto &devices = columns.data().devices;
    for (int i = 0; i < devices.size(); ++i) {
        if (devices[i].id == device)
            return i;
    }
    return -1;
}

class PlanPageTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_page = std::make_unique<ui::PlanPage>();
        m_page->resize(1400, 900);
        m_page->show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(m_page.get()));
        m_page->findChild<QLineEdit *>(QStringLiteral("planMaxMemory"))->setText(QStringLiteral("0=15GiB,1=15GiB,cpu=13GiB"));
        auto *train = m_page->findChild<QComboBox *>(QStringLiteral("planTrain"));
        train->setCurrentIndex(train->findData(QStringLiteral("lora")));
    }

    std::unique_ptr<ui::PlanPage> m_page;
};

} // namespace

TEST_F(PlanPageTest, OpensAConfigAndShowsEveryDeviceWithAVerdict)
{
    ASSERT_TRUE(m_page->openModel(kChatGlm));
    ASSERT_NE(m_page->plan(), nullptr);
    const auto &columns = *m_page->deviceColumns();
    ASSERT_EQ(columnOf(columns, QStringLiteral("0")), 0);
    ASSERT_GE(columnOf(columns, QStringLiteral("1")), 0);
    ASSERT_GE(columnOf(columns, QStringLiteral("cpu")), 0);
    qint64 blocks = 0;
    for (const auto &column : columns.data().devices)
        blocks += column.modules.size();
    EXPECT_GE(blocks, 28 + 3) << "28 GLM blocks plus embeddings, final norm and lm_head";
    const QString verdict = m_page->findChild<QLabel *>(QStringLiteral("planVerdict"))->text();
    EXPECT_TRUE(verdict.contains(QStringLiteral("LoRA training"))) << verdict.toStdString();
    EXPECT_EQ(verdict.contains(QStringLiteral("does not fit")), !m_page->plan()->fits);
}

// Train with This Plan is for what the engine trains: a LLaMA-family folder, not a ChatGLM one, which
// tunebench plans but does not train; the tooltip says why.
TEST_F(PlanPageTest, TrainingIsOfferedOnlyForArchitecturesTheEngineTrains)
{
    auto *train = m_page->findChild<QPushButton *>(QStringLiteral("trainWithPlan"));
    ASSERT_TRUE(m_page->openModel(kChatGlm));
    EXPECT_FALSE(train->isEnabled());
    EXPECT_TRUE(train->toolTip().contains(QStringLiteral("does not train them yet"))) << train->toolTip().toStdString();
    EXPECT_TRUE(train->toolTip().contains(QStringLiteral("chatglm"))) << train->toolTip().toStdString();

    ASSERT_TRUE(m_page->openModel(QStringLiteral(TUNEBENCH_TEST_DATA "/model/configs/qwen3-0.6b.json")));
    EXPECT_TRUE(train->isEnabled());
    EXPECT_TRUE(train->toolTip().isEmpty()) << train->toolTip().toStdString();
}

TEST_F(PlanPageTest, DraggingALayerToTheCpuChangesTheBarsAndUndoRestoresThem)
{
    ASSERT_TRUE(m_page->openModel(kChatGlm));
    auto *columns = m_page->deviceColumns();
    const int gpu = columnOf(*columns, QStringLiteral("0"));
    const int cpu = columnOf(*columns, QStringLiteral("cpu"));
    ASSERT_GE(gpu, 0);
    ASSERT_GE(cpu, 0);
    ASSERT_FALSE(columns->data().devices[gpu].modules.isEmpty()) << "GPU 0 holds something to drag";
    const int lastBlock = int(columns->data().devices[gpu].modules.size()) - 1;
    const QString module = columns->data().devices[gpu].modules[lastBlock].module;
    const qint64 gpuBefore = columns->data().devices[gpu].used();
    const qint64 cpuBefore = columns->data().devices[cpu].used();

    // Drag the block from GPU 0's list onto the CPU's column, as a user does with the mouse.
    const QPoint from = columns->blockRect(gpu, lastBlock).center();
    const QPoint to = columns->columnRect(cpu).center();
    QTest::mousePress(columns, Qt::LeftButton, Qt::NoModifier, from);
    QTest::mouseMove(columns, from + QPoint(10, 10));
    QTest::mouseMove(columns, to);
    QTest::mouseRelease(columns, Qt::LeftButton, Qt::NoModifier, to);

    ASSERT_EQ(m_page->plan()->deviceOf(module.toStdString()), "cpu") << module.toStdString();
    EXPECT_LT(columns->data().devices[gpu].used(), gpuBefore);
    EXPECT_GT(columns->data().devices[cpu].used(), cpuBefore);
    EXPECT_EQ(m_page->undoStack()->count(), 1);

    m_page->undoStack()->undo();
    EXPECT_EQ(m_page->plan()->deviceOf(module.toStdString()), "0");
    EXPECT_EQ(columns->data().devices[gpu].used(), gpuBefore);
    EXPECT_EQ(columns->data().devices[cpu].used(), cpuBefore);
    m_page->undoStack()->redo();
    EXPECT_EQ(m_page->plan()->deviceOf(module.toStdString()), "cpu");
}

TEST_F(PlanPageTest, TheGpuOverheadIsAFieldThatReplans)
{
    ASSERT_TRUE(m_page->openModel(kChatGlm));
    ASSERT_NE(m_page->plan(), nullptr);
    EXPECT_EQ(m_page->plan()->usage[0].memory.overhead, int64_t(1) << 30);
    auto *overhead = m_page->findChild<QDoubleSpinBox *>(QStringLiteral("planGpuOverhead"));
    ASSERT_NE(overhead, nullptr);
    overhead->setFocus();
    overhead->selectAll();
    QTest::keyClicks(overhead, QStringLiteral("2.5"));
    QTest::keyClick(overhead, Qt::Key_Return);
    EXPECT_EQ(m_page->plan()->usage[0].memory.overhead, int64_t(5) << 29);
    EXPECT_EQ(m_page->plan()->devices[0].overheadBytes, int64_t(5) << 29);
}

// Closing the window with an edit in progress moves the focus away, which finishes the edit while the
// page is being destroyed: it must not re-plan then (it crashed, the planner half gone).
TEST_F(PlanPageTest, ClosingWithAnEditInProgressDoesNotReplanAHalfDestroyedPage)
{
    ASSERT_TRUE(m_page->openModel(kChatGlm));
    QApplication::setActiveWindow(m_page.get());
    ASSERT_TRUE(QTest::qWaitForWindowActive(m_page.get()));
    auto *overhead = m_page->findChild<QDoubleSpinBox *>(QStringLiteral("planGpuOverhead"));
    ASSERT_NE(overhead, nullptr);
    overhead->setFocus();
    ASSERT_TRUE(QTest::qWaitFor([&] { return overhead->hasFocus(); }, 2000));
    overhead->selectAll();
    QTest::keyClicks(overhead, QStringLiteral("3"));
    // When the edit finishes during the destruction, nothing may connect it to the page any more: the
    // page's own slots (re-planning) are connected before this one, so they would already have run. Our
    // disconnect compares pointers only and never touches the half-destroyed page.
    QObject watcher;
    int finished = 0;
    bool stillConnectedToPage = false;
    ui::PlanPage *const page = m_page.get();
    QObject::connect(overhead, &QDoubleSpinBox::editingFinished, &watcher, [&] {
        ++finished;
        stillConnectedToPage = stillConnectedToPage || QObject::disconnect(overhead, nullptr, page, nullptr);
    });
    m_page.reset();
    EXPECT_EQ(finished, 1) << "the edit did not finish during the destruction: the test shows nothing";
    EXPECT_FALSE(stillConnectedToPage) << "the finished edit still reached the page being destroyed";
}

TEST_F(PlanPageTest, ExportedMapImportsBackToTheSamePlan)
{
    ASSERT_TRUE(m_page->openModel(kChatGlm));
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("map.json"));
    ASSERT_TRUE(m_page->exportMap(file));
    std::ifstream in(file.toStdString());
    const auto exported = nlohmann::json::parse(in);
    ASSERT_TRUE(exported.contains("device_map"));
    ASSERT_TRUE(exported.contains("max_memory"));
    auto entries = [](const engine::plan::Plan &plan) {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto &placement : plan.deviceMap)
            out.emplace_back(placement.module, placement.device);
        return out;
    };
    const auto before = entries(*m_page->plan());
    ASSERT_TRUE(m_page->moveModule(QString::fromStdString(before.back().first), QStringLiteral("cpu")));
    ASSERT_NE(entries(*m_page->plan()), before);
    ASSERT_TRUE(m_page->importMap(file));
    EXPECT_EQ(entries(*m_page->plan()), before);
}

TEST_F(PlanPageTest, ABadModelOrBudgetSaysWhatIsWrong)
{
    EXPECT_FALSE(m_page->openModel(QStringLiteral("/nonexistent/model")));
    const QString error = m_page->findChild<QLabel *>(QStringLiteral("planVerdict"))->text();
    EXPECT_TRUE(error.contains(QStringLiteral("/nonexistent/model"))) << error.toStdString();
    ASSERT_TRUE(m_page->openModel(kChatGlm));
    auto *memory = m_page->findChild<QLineEdit *>(QStringLiteral("planMaxMemory"));
    memory->setText(QStringLiteral("0=fifteen"));
    m_page->replan();
    const QString budget = m_page->findChild<QLabel *>(QStringLiteral("planVerdict"))->text();
    EXPECT_TRUE(budget.contains(QStringLiteral("fifteen"))) << budget.toStdString();
}

// Regression: the page opened with a config.json exported a script that loaded that file.
TEST_F(PlanPageTest, ExportedPythonLoadsTheModelFolder)
{
    ASSERT_TRUE(m_page->openModel(kChatGlm));
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("train_with_map.py"));
    ASSERT_TRUE(m_page->exportPython(file));
    std::ifstream in(file.toStdString());
    const std::string py((std::istreambuf_iterator<char>(in)), {});
    const std::string folder = QFileInfo(kChatGlm).path().toStdString();
    EXPECT_NE(py.find("MODEL_FOLDER = \"" + folder + "\"\n"), std::string::npos) << py;
    EXPECT_NE(py.find("model = AutoModel.from_pretrained("), std::string::npos) << py;
    EXPECT_NE(py.find("TRUST_REMOTE_CODE = True"), std::string::npos) << py;
    EXPECT_EQ(py.find("chatglm-6b.json"), std::string::npos) << py;
}

TEST_F(PlanPageTest, TheVerdictAgreesWithItsSubject)
{
    auto *train = m_page->findChild<QComboBox *>(QStringLiteral("planTrain"));
    auto *memory = m_page->findChild<QLineEdit *>(QStringLiteral("planMaxMemory"));
    train->setCurrentIndex(train->findData(QStringLiteral("none")));
    ASSERT_TRUE(m_page->openModel(kChatGlm));
    const auto verdict = [this] { return m_page->findChild<QLabel *>(QStringLiteral("planVerdict"))->text(); };
    // Regression: "The weights fits".
    EXPECT_TRUE(verdict().startsWith(QStringLiteral("The weights fit: "))) << verdict().toStdString();
    memory->setText(QStringLiteral("0=1GiB,cpu=1GiB,disk=1GiB"));
    m_page->replan();
    EXPECT_TRUE(verdict().startsWith(QStringLiteral("The weights do not fit: "))) << verdict().toStdString();
    train->setCurrentIndex(train->findData(QStringLiteral("full")));
    EXPECT_TRUE(verdict().startsWith(QStringLiteral("Full fine-tuning does not fit: "))) << verdict().toStdString();
    memory->setText(QStringLiteral("0=1GiB,cpu=1GiB"));
    train->setCurrentIndex(train->findData(QStringLiteral("none")));
    EXPECT_TRUE(verdict().startsWith(QStringLiteral("Nothing is placed in memory"))) << verdict().toStdString();
    memory->setText(QStringLiteral("0=15GiB,1=15GiB,cpu=13GiB"));
    train->setCurrentIndex(train->findData(QStringLiteral("lora")));
    EXPECT_TRUE(verdict().startsWith(QStringLiteral("LoRA training fits: "))) << verdict().toStdString();
}

// Regression: narrow columns showed "…er.layers.12", the shared "transformer." eating the room.
TEST_F(PlanPageTest, BlocksAreNamedWithoutTheSharedPrefix)
{
    ASSERT_TRUE(m_page->openModel(kChatGlm));
    QStringList labels;
    for (const auto &column : m_page->deviceColumns()->data().devices) {
        for (const auto &block : column.modules) {
            labels << block.label;
            EXPECT_FALSE(block.label.startsWith(QStringLiteral("transformer."))) << block.label.toStdString();
            if (block.module.startsWith(QStringLiteral("transformer.")))
                EXPECT_EQ(QStringLiteral("transformer.") + block.label, block.module) << "the move still names the module";
            else
                EXPECT_TRUE(block.label.isEmpty() || block.label == block.module) << block.module.toStdString();
        }
    }
    EXPECT_TRUE(labels.contains(QStringLiteral("layers.12"))) << labels.join(QLatin1Char(' ')).toStdString();
    EXPECT_TRUE(labels.contains(QStringLiteral("word_embeddings"))) << labels.join(QLatin1Char(' ')).toStdString();
}

TEST(DeviceColumnsLabels, OnlyAContainerEveryNestedNameSharesIsDropped)
{
    const auto labelsOf = [](const QStringList &modules) {
        ui::DeviceColumnsData data;
        data.devices.append(ui::DeviceColumn{});
        for (const QString &m : modules)
            data.devices[0].modules.append({m, {}, 1, {}});
        ui::labelBlocksWithoutSharedPrefix(data);
        QStringList out;
        for (const auto &block : data.devices[0].modules)
            out << (block.label.isEmpty() ? block.module : block.label);
        return out;
    };
    EXPECT_EQ(labelsOf({"model.embed_tokens", "model.layers.0", "model.layers.1", "model.norm", "lm_head"}),
              (QStringList{"embed_tokens", "layers.0", "layers.1", "norm", "lm_head"}));
    EXPECT_EQ(labelsOf({"model.layers.0", "model.layers.1"}), (QStringList{"layers.0", "layers.1"}));
    EXPECT_EQ(labelsOf({"model.norm", "encoder.norm"}), (QStringList{"model.norm", "encoder.norm"}));
    EXPECT_EQ(labelsOf({"model.norm", "norm"}), (QStringList{"model.norm", "norm"})) << "shortening would collide";
}

TEST_F(PlanPageTest, PitfallsAreAListWithSeverityIconsErrorsFirst)
{
    // LoRA with most layers on disk: an error (adapters on disk) and warnings (optimizer, clipping).
    m_page->findChild<QLineEdit *>(QStringLiteral("planMaxMemory"))->setText(QStringLiteral("0=2GiB,1=2GiB,cpu=2GiB,disk=100GiB"));
    ASSERT_TRUE(m_page->openModel(kChatGlm));
    const auto &lint = m_page->plan()->lint;
    auto *list = m_page->findChild<QListWidget *>(QStringLiteral("planLint"));
    ASSERT_EQ(list->count(), int(lint.size()));
    int errors = 0;
    for (const auto &finding : lint)
        errors += finding.severity == "error" ? 1 : 0;
    ASSERT_GT(errors, 0);
    ASSERT_LT(errors, int(lint.size())) << "warnings too";
    const QStyle *style = m_page->style();
    const QImage errorIcon = style->standardIcon(QStyle::SP_MessageBoxCritical).pixmap(24).toImage();
    const QImage warningIcon = style->standardIcon(QStyle::SP_MessageBoxWarning).pixmap(24).toImage();
    for (int row = 0; row < list->count(); ++row) {
        const QListWidgetItem *item = list->item(row);
        const bool error = row < errors;
        EXPECT_EQ(item->data(Qt::UserRole).toString(), error ? QStringLiteral("error") : QStringLiteral("warning")) << row;
        ASSERT_FALSE(item->icon().isNull()) << row;
        EXPECT_EQ(item->icon().pixmap(24).toImage(), error ? errorIcon : warningIcon) << row;
        const auto finding = std::find_if(lint.begin(), lint.end(), [&](const auto &f) { return QString::fromStdString(f.id) == item->toolTip(); });
        ASSERT_NE(finding, lint.end()) << item->toolTip().toStdString();
        EXPECT_EQ(item->text(), QString::fromStdString(finding->message) + QStringLiteral("\nFix: ") + QString::fromStdString(finding->fix));
    }
}

namespace {

// Every field of the settings bar is shown whole: visible, at least its size hint wide, and inside the window.
void expectSettingsUnclipped(QWidget *window)
{
    QWidget *bar = window->findChild<QWidget *>(QStringLiteral("planSettings"));
    ASSERT_NE(bar, nullptr);
    const QList<QWidget *> fields = bar->findChildren<QWidget *>(QString(), Qt::FindDirectChildrenOnly);
    ASSERT_GE(fields.size(), 12);
    for (QWidget *field : fields) {
        const QString name = QString::fromLatin1(field->metaObject()->className()) + QLatin1Char(' ') + field->objectName();
        SCOPED_TRACE(name.toStdString());
        EXPECT_TRUE(field->isVisible());
        EXPECT_GE(field->width(), field->sizeHint().width());
        EXPECT_GE(field->height(), field->minimumSizeHint().height());
        const QRect inWindow(field->mapTo(window, QPoint(0, 0)), field->size());
        EXPECT_TRUE(window->rect().contains(inWindow)) << inWindow.x() << "," << inWindow.y() << " " << inWindow.width() << "x"
                                                       << inWindow.height();
    }
}

} // namespace

TEST_F(PlanPageTest, EverySettingIsWholeAt1280PixelsWide)
{
    // A desktop's usual 11 pt (the offscreen platform's default font is smaller and hides clipping).
    QFont desktop = m_page->font();
    desktop.setPointSizeF(11);
    m_page->setFont(desktop);
    ASSERT_TRUE(m_page->openModel(kChatGlm));
    m_page->resize(1280, 800);
    QTest::qWait(50);
    EXPECT_EQ(m_page->size(), QSize(1280, 800)) << "28 layers do not make the page taller than the screen";
    auto *columns = m_page->deviceColumns();
    const QWidget *viewport = columns->parentWidget();
    EXPECT_LE(columns->width(), viewport->width()) << "every device column in view, none scrolled off sideways";
    EXPECT_GE(columns->width(), columns->minimumSizeHint().width());
    expectSettingsUnclipped(m_page.get());

    // In the main window, beside the page list, on a 1280 x 800 screen.
    QTemporaryDir store;
    ui::MainWindow window(store.filePath(QStringLiteral("runs.sqlite3")));
    window.setFont(desktop);
    window.resize(1280, 800);
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    window.showPage(ui::MainWindow::Page::Plan);
    ASSERT_TRUE(window.planPage()->openModel(kChatGlm));
    QTest::qWait(50);
    EXPECT_LE(window.width(), 1280) << "the window's minimum size fits the screen";
    EXPECT_LE(window.height(), 800) << "the window's minimum size fits the screen";
    expectSettingsUnclipped(&window);
}

// Saves the README's picture of the Plan page when TUNEBENCH_PLAN_SCREENSHOT names a PNG path.
TEST_F(PlanPageTest, Screenshot)
{
    const QString path = qEnvironmentVariable("TUNEBENCH_PLAN_SCREENSHOT");
    if (path.isEmpty())
        GTEST_SKIP() << "set TUNEBENCH_PLAN_SCREENSHOT=path.png to save a screenshot of the Plan page";
    ASSERT_TRUE(m_page->openModel(kChatGlm));
    m_page->resize(1280, 1000); // a laptop's width; tall enough to show all 28 layers without scrolling
    QTest::qWait(200);
    ASSERT_TRUE(m_page->grab().toImage().save(path));
}

// Issue 27: with no model open the page offers the shipped catalog; choosing one plans it like a folder.
TEST_F(PlanPageTest, OffersTheCatalogWhenEmptyAndPlansTheChosenModel)
{
    auto *row = m_page->findChild<QWidget *>(QStringLiteral("planCatalogRow"));
    auto *combo = m_page->findChild<QComboBox *>(QStringLiteral("planCatalog"));
    auto *button = m_page->findChild<QPushButton *>(QStringLiteral("planCatalogButton"));
    ASSERT_TRUE(row && combo && button);
    EXPECT_TRUE(row->isVisible());
    // Every shipped catalog file is offered (counted on disk, not through the page's own list).
    const QStringList files = QDir(QStringLiteral(TUNEBENCH_TEST_DATA "/../../resources/plan-catalog"))
                                  .entryList({QStringLiteral("*.json")}, QDir::Files);
    ASSERT_GE(files.size(), 13);
    EXPECT_EQ(combo->count(), files.size());
    EXPECT_EQ(m_page->plan(), nullptr);

    const int llama = combo->findData(QStringLiteral("llama-3.1-8b"));
    ASSERT_GE(llama, 0);
    EXPECT_TRUE(combo->itemText(llama).contains(QStringLiteral("Llama 3.1 8B"))) << combo->itemText(llama).toStdString();
    combo->setCurrentIndex(llama);
    QTest::mouseClick(button, Qt::LeftButton);

    ASSERT_NE(m_page->plan(), nullptr);
    EXPECT_EQ(m_page->plan()->modelType, "llama");
    EXPECT_EQ(m_page->modelPath(), QStringLiteral("meta-llama/Llama-3.1-8B")) << "the Python export loads the repo";
    EXPECT_EQ(m_page->findChild<QLineEdit *>(QStringLiteral("planModelPath"))->text(), QStringLiteral("llama-3.1-8b"));
    qint64 blocks = 0;
    for (const auto &column : m_page->deviceColumns()->data().devices)
        blocks += column.modules.size();
    EXPECT_GE(blocks, 32 + 3) << "32 decoder layers plus embeddings, final norm and lm_head";
    const QString verdict = m_page->findChild<QLabel *>(QStringLiteral("planVerdict"))->text();
    EXPECT_TRUE(verdict.contains(QStringLiteral("LoRA training"))) << verdict.toStdString();
    EXPECT_FALSE(row->isVisible()) << "the offer is for the empty page";
    EXPECT_FALSE(m_page->findChild<QPushButton *>(QStringLiteral("trainWithPlan"))->isEnabled())
        << "a catalog model has no weights to train";

    // The model field takes a catalog name too, and a wrong one is refused by name.
    EXPECT_FALSE(m_page->openModel(QStringLiteral("qwen2.5-8b")));
    const QString refused = m_page->findChild<QLabel *>(QStringLiteral("planVerdict"))->text();
    EXPECT_TRUE(refused.contains(QStringLiteral("no catalog model named \"qwen2.5-8b\""))) << refused.toStdString();
}

// The advisor on the page: Llama-3.1-8B full fine-tuning on two 15 GiB GPUs and 13 GiB of RAM does not fit;
// the page lists the nearest plans that do, and one click applies a suggestion's settings.
TEST_F(PlanPageTest, AdviceAppliesTheSettingsOfAPlanThatFits)
{
    auto *train = m_page->findChild<QComboBox *>(QStringLiteral("planTrain"));
    train->setCurrentIndex(train->findData(QStringLiteral("full")));
    ASSERT_TRUE(m_page->openModel(QStringLiteral(TUNEBENCH_TEST_DATA "/model/configs/llama-3.1-8b.json")));
    ASSERT_NE(m_page->plan(), nullptr);
    EXPECT_FALSE(m_page->plan()->fits);
    auto *advice = m_page->findChild<QListWidget *>(QStringLiteral("planAdvice"));
    ASSERT_NE(advice, nullptr);
    EXPECT_TRUE(advice->isVisible());
    ASSERT_GE(advice->count(), 1);
    QListWidgetItem *first = advice->item(0);
    EXPECT_TRUE(first->text().contains(QStringLiteral("--train lora"))) << first->text().toStdString();
    const QRect where = advice->visualItemRect(first);
    QTest::mouseClick(advice->viewport(), Qt::LeftButton, {}, where.center());
    EXPECT_EQ(train->currentData().toString(), QStringLiteral("lora"));
    ASSERT_NE(m_page->plan(), nullptr);
    EXPECT_TRUE(m_page->plan()->fits);
    // A plan that fits gets the largest batch that fits.
    ASSERT_GE(advice->count(), 1);
    EXPECT_TRUE(advice->item(0)->text().contains(QStringLiteral("--batch-size"))) << advice->item(0)->text().toStdString();
}

// Issue 28: Mixtral 8x7B from the catalog. Its 32 layers each hold 8 experts, shown folded: the Modules tab lists a
// layer's experts as one row under its mlp (expand the layer, then the mlp, as a user would), and the device
// columns place whole layers that say how many experts they hold; no block or map entry names an expert.
TEST_F(PlanPageTest, MixtureOfExpertsLayersShowTheirExpertsFolded)
{
    ASSERT_TRUE(m_page->openModel(QStringLiteral("mixtral-8x7b")));
    ASSERT_NE(m_page->plan(), nullptr);
    EXPECT_EQ(m_page->plan()->modelType, "mixtral");
    auto *view = m_page->findChild<QTreeView *>();
    ASSERT_NE(view, nullptr);
    auto *model = qobject_cast<ui::ModuleTreeModel *>(view->model());
    ASSERT_NE(model, nullptr);
    EXPECT_EQ(model->rowCount(model->indexForPath(QStringLiteral("model.layers"))), 32);
    const QModelIndex layer = model->indexForPath(QStringLiteral("model.layers.7"));
    const QModelIndex mlp = model->indexForPath(QStringLiteral("model.layers.7.mlp"));
    const QModelIndex experts = model->indexForPath(QStringLiteral("model.layers.7.mlp.experts"));
    ASSERT_TRUE(experts.isValid());
    view->expand(model->indexForPath(QStringLiteral("model")));
    view->expand(model->indexForPath(QStringLiteral("model.layers")));
    view->expand(layer);
    view->expand(mlp);
    view->scrollTo(experts);
    EXPECT_TRUE(view->visualRect(experts).isValid()) << "the experts row shows once its layer and mlp are open";
    EXPECT_EQ(model->rowCount(mlp), 2) << "router and experts";
    EXPECT_EQ(model->rowCount(experts), 0) << "no row per expert";
    EXPECT_EQ(experts.siblingAtColumn(ui::ModuleTreeModel::ClassColumn).data().toString(), QStringLiteral("MixtralExperts × 8"));
    EXPECT_EQ(experts.siblingAtColumn(ui::ModuleTreeModel::ParametersColumn).data(ui::ModuleTreeModel::RawValueRole).toLongLong(),
              1'409'286'144LL);

    bool layerBlock = false;
    for (const auto &column : m_page->deviceColumns()->data().devices) {
        for (const auto &block : column.modules) {
            EXPECT_FALSE(block.module.contains(QStringLiteral("experts"))) << block.module.toStdString();
            if (block.module == QStringLiteral("model.layers.7")) {
                layerBlock = true;
                EXPECT_TRUE(block.detail.contains(QStringLiteral("8 experts"))) << block.detail.toStdString();
            }
        }
    }
    EXPECT_TRUE(layerBlock);
    for (const auto &placement : m_page->plan()->deviceMap)
        EXPECT_EQ(placement.module.find("experts"), std::string::npos) << placement.module;
}

// Issue 28: "Why here" also says which attention the estimate assumes and what each layer's window bounds.
TEST_F(PlanPageTest, WhyHereShowsEachLayersWindowAndKvCache)
{
    ASSERT_TRUE(m_page->openModel(QStringLiteral(TUNEBENCH_TEST_DATA "/model/configs/mistral-7b-v0.1.json")));
    auto *list = m_page->findChild<QListWidget *>(QStringLiteral("planExplanations"));
    ASSERT_NE(list, nullptr);
    QString attention;
    for (int i = 0; i < list->count(); ++i) {
        if (list->item(i)->text().startsWith(QStringLiteral("attention at ")))
            attention = list->item(i)->text();
    }
    EXPECT_TRUE(attention.contains(QStringLiteral("(eager:"))) << attention.toStdString();
    EXPECT_TRUE(attention.contains(QStringLiteral("layers 0-31, window 4096"))) << attention.toStdString();
    EXPECT_TRUE(attention.contains(QStringLiteral("tunebench generate keeps every token"))) << attention.toStdString();
}
