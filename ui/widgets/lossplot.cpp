#include "ui/widgets/lossplot.h"

#include "ui/widgets/qcustomplotinclude.h"

#include <QEvent>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace ui {

LossPlot::LossPlot(QWidget *parent) : QWidget(parent)
{
    m_plot = new QCustomPlot(this);
    m_plot->setObjectName(QStringLiteral("lossCustomPlot"));
    m_plot->setMinimumSize(320, 200);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);

    m_raw = m_plot->addGraph();
    m_raw->setName(tr("Loss (raw)"));
    m_smoothed = m_plot->addGraph();
    m_smoothed->setName(tr("Loss (smoothed)"));
    m_eval = m_plot->addGraph();
    m_eval->setName(tr("Eval loss"));
    m_eval->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 7));
    m_eval->removeFromLegend(); // until the first evaluation
    m_plot->xAxis->setLabel(tr("Step"));
    m_plot->yAxis->setLabel(tr("Loss"));
    m_plot->xAxis->setRange(0, 1);
    m_plot->yAxis->setRange(0, 1);
    m_plot->legend->setVisible(true);
    m_plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    m_plot->setAntialiasedElements(QCP::aePlottables);

    m_emptyHint = new QCPItemText(m_plot);
    m_emptyHint->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_emptyHint->position->setCoords(0.5, 0.5);
    m_emptyHint->setText(tr("Start a run to see its loss curve here."));
    m_emptyHint->setSelectable(false);

    applyPalette();
}

void LossPlot::applyPalette()
{
    const QPalette pal = palette();
    const QColor text = pal.color(QPalette::WindowText);
    const QColor base = pal.color(QPalette::Base);
    QColor grid = pal.color(QPalette::Mid);
    grid.setAlpha(90);
    const QColor accent = pal.color(QPalette::Highlight);

    m_plot->setBackground(base);
    for (QCPAxis *axis : {m_plot->xAxis, m_plot->yAxis}) {
        axis->setBasePen(QPen(text));
        axis->setTickPen(QPen(text));
        axis->setSubTickPen(QPen(text));
        axis->setTickLabelColor(text);
        axis->setLabelColor(text);
        axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
    }
    QColor rawColor = accent;
    rawColor.setAlpha(110);
    m_raw->setPen(QPen(rawColor, 1.2));
    m_smoothed->setPen(QPen(accent, 2.4));
    // The eval curve in the palette's link colour, or a warm contrast when it is too close to the accent.
    QColor evalColor = pal.color(QPalette::Link);
    if (std::abs(evalColor.hslHue() - accent.hslHue()) < 40)
        evalColor = QColor::fromHsl((accent.hslHue() + 160) % 360, 170, text.lightness() > 128 ? 160 : 110);
    m_eval->setPen(QPen(evalColor, 1.8));
    m_plot->legend->setBrush(base);
    m_plot->legend->setBorderPen(QPen(grid));
    m_plot->legend->setTextColor(text);
    m_emptyHint->setColor(pal.color(QPalette::PlaceholderText));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void LossPlot::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        applyPalette();
}

void LossPlot::clear()
{
    m_raw->data()->clear();
    m_smoothed->data()->clear();
    m_eval->data()->clear();
    m_eval->removeFromLegend();
    m_ema = 0;
    m_betaPower = 1;
    m_lastRaw = 0;
    m_lastSmoothed = 0;
    m_maxStep = 0;
    m_emptyHint->setVisible(true);
    rescale();
    replot();
}

void LossPlot::setTotalSteps(qint64 steps)
{
    m_totalSteps = std::max<qint64>(steps, 0);
    rescale();
    replot();
}

void LossPlot::setSmoothing(double beta)
{
    m_beta = std::clamp(beta, 0.0, 0.999);
}

void LossPlot::addPoint(double step, double loss)
{
    m_maxStep = std::max(m_maxStep, step);
    m_emptyHint->setVisible(false);
    if (!std::isfinite(loss)) {
        // A gap in both curves; the average carries on from the last finite value.
        m_raw->addData(step, std::nan(""));
        m_smoothed->addData(step, std::nan(""));
        return;
    }
    m_lastRaw = loss;
    m_raw->addData(step, loss);
    m_ema = m_beta * m_ema + (1 - m_beta) * loss;
    m_betaPower *= m_beta;
    m_lastSmoothed = m_betaPower < 1 ? m_ema / (1 - m_betaPower) : loss;
    m_smoothed->addData(step, m_lastSmoothed);
}

void LossPlot::addEvalPoint(double step, double loss)
{
    if (!std::isfinite(loss))
        return;
    if (m_eval->dataCount() == 0)
        m_eval->addToLegend();
    m_emptyHint->setVisible(false);
    m_maxStep = std::max(m_maxStep, step);
    m_eval->addData(step, loss);
}

int LossPlot::evalPointCount() const { return m_eval->dataCount(); }

void LossPlot::rescale()
{
    const double xMax = std::max({static_cast<double>(m_totalSteps), m_maxStep, 1.0});
    m_plot->xAxis->setRange(0, xMax);
    bool found = false;
    QCPRange range = m_raw->data()->valueRange(found);
    bool evalFound = false;
    const QCPRange evalRange = m_eval->data()->valueRange(evalFound);
    if (evalFound)
        range = found ? QCPRange(std::min(range.lower, evalRange.lower), std::max(range.upper, evalRange.upper)) : evalRange;
    found = found || evalFound;
    if (!found) {
        m_plot->yAxis->setRange(0, 1);
        return;
    }
    double low = range.lower;
    double high = range.upper;
    const double span = std::max(high - low, std::max(std::abs(high) * 0.05, 1e-3));
    low = std::max(0.0, low - 0.08 * span);
    high += 0.08 * span;
    if (range.lower < 0)
        low = range.lower - 0.08 * span;
    m_plot->yAxis->setRange(low, high);
}

void LossPlot::replot()
{
    rescale();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

int LossPlot::pointCount() const { return m_raw->dataCount(); }

} // namespace ui
