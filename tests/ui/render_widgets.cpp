// Renders the Plan/Inspect widgets with the sample data of widgetsamples.h to PNG files, and times
// DeviceColumnsWidget::setData for an 80-layer plan (the Plan page's drag-and-revalidate repaint).
//   usage: render_widgets OUT_DIR [--dark]
// Writes OUT_DIR/widgets-{devicecolumns,versiontimeline,autogradgraph,moduletree}[-dark].png.

#include "widgetsamples.h"

#include "engine/model/moduletree.h"
#include "ui/models/moduletreemodel.h"
#include "ui/widgets/autogradgraphview.h"
#include "ui/widgets/devicecolumns.h"
#include "ui/widgets/versiontimeline.h"
#include "ui/widgets/widgetstyle.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QHeaderView>
#include <QImage>
#include <QPainter>
#include <QStyleFactory>
#include <QTreeView>

#include <cstdio>

namespace {


bool save(QWidget &widget, const QString &path)
{
    QImage image(widget.size(), QImage::Format_ARGB32_Premultiplied);
    image.fill(widget.palette().color(QPalette::Window));
    widget.render(&image);
    const bool ok = image.save(path);
    std::printf("%s %s\n", ok ? "wrote" : "could not write", qPrintable(path));
    return ok;
}

} // namespace

int main(int argc, char **argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    if (argc < 2) {
        std::fprintf(stderr, "usage: render_widgets OUT_DIR [--dark]\n");
        return 2;
    }
    const QString dir = QString::fromLocal8Bit(argv[1]);
    const bool dark = argc > 2 && QByteArray(argv[2]) == "--dark";
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    QApplication::setPalette(dark ? ui::darkPalette() : QApplication::style()->standardPalette());
    const QString suffix = dark ? QStringLiteral("-dark.png") : QStringLiteral(".png");
    bool ok = true;

    ui::DeviceColumnsWidget columns;
    columns.setData(uitest::chatGlmOnTwoT4s());
    columns.resize(columns.sizeHint().width() + 40, columns.sizeHint().height());
    ok &= save(columns, dir + QStringLiteral("/widgets-devicecolumns") + suffix);

    ui::VersionTimelineWidget timeline;
    timeline.setData(uitest::kvCacheTimeline());
    timeline.resize(1100, timeline.sizeHint().height());
    timeline.setSelectedOp(41);
    ok &= save(timeline, dir + QStringLiteral("/widgets-versiontimeline") + suffix);

    ui::AutogradGraphView graph;
    graph.setData(uitest::kvCacheGraph());
    graph.setSelectedNode(uitest::kKvCacheFailingNode);
    graph.setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    graph.setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    graph.resize(graph.sceneRect().size().toSize() + QSize(4, 4)); // 1:1, nothing cut off
    graph.show(); // lays out the viewport at its real size
    QApplication::processEvents();
    graph.fitGraph();
    ok &= save(graph, dir + QStringLiteral("/widgets-autogradgraph") + suffix);

    ui::ModuleTreeModel model;
    model.setTree(engine::model::moduleTreeFromFolder(TUNEBENCH_TEST_DATA "/model/configs/llama-2-7b.json"));
    QHash<QString, QString> map{{QStringLiteral("model.embed_tokens"), QStringLiteral("0")},
                                {QStringLiteral("model.norm"), QStringLiteral("1")},
                                {QStringLiteral("lm_head"), QStringLiteral("1")}};
    for (int i = 0; i < 32; ++i)
        map.insert(QStringLiteral("model.layers.%1").arg(i), i < 16 ? QStringLiteral("0") : QStringLiteral("1"));
    model.setDeviceMap(map);
    QTreeView tree;
    tree.setModel(&model);
    tree.resize(760, 420);
    tree.expand(model.indexForPath(QStringLiteral("model")));
    tree.expand(model.indexForPath(QStringLiteral("model.layers")));
    tree.expand(model.indexForPath(QStringLiteral("model.layers.0")));
    tree.header()->resizeSection(0, 240);
    tree.header()->resizeSection(1, 170);
    ok &= save(tree, dir + QStringLiteral("/widgets-moduletree") + suffix);

    // setData + layout for an 80-layer plan (one block per layer, 2 GPUs + cpu), then one full paint.
    ui::DeviceColumnsWidget big;
    const ui::DeviceColumnsData plan = uitest::perLayerPlan(80, 2);
    big.setData(plan);
    big.resize(big.sizeHint());
    constexpr int kRounds = 2000;
    QElapsedTimer timer;
    timer.start();
    for (int i = 0; i < kRounds; ++i)
        big.setData(plan);
    const double setDataUs = double(timer.nsecsElapsed()) / kRounds / 1000.0;
    QImage canvas(big.size(), QImage::Format_ARGB32_Premultiplied);
    constexpr int kPaints = 100;
    timer.restart();
    for (int i = 0; i < kPaints; ++i)
        big.render(&canvas);
    const double paintUs = double(timer.nsecsElapsed()) / kPaints / 1000.0;
    std::printf("DeviceColumnsWidget, 80 layers on 3 devices: setData %.1f us, full paint %.1f us (%dx%d)\n", setDataUs, paintUs,
                big.width(), big.height());
    return ok ? 0 : 1;
}
