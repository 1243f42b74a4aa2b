#include "ui/pages/runspage.h"

#include "engine/core/error.h"
#include "engine/store/runstore.h"
#include "ui/models/runsmodel.h"

#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include <exception>

namespace ui {

RunsPage::RunsPage(const QString &storePath, QWidget *parent) : QWidget(parent), m_storePath(storePath)
{
    m_model = new RunsModel(this);
    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(RunsModel::RawValueRole);

    m_view = new QTableView(this);
    m_view->setObjectName(QStringLiteral("runsTable"));
    m_view->setModel(m_proxy);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(RunsModel::IdColumn, Qt::DescendingOrder);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setAlternatingRowColors(true);
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_view->verticalHeader()->hide();
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);

    auto *refreshButton = new QPushButton(tr("&Refresh"), this);
    refreshButton->setObjectName(QStringLiteral("refreshButton"));
    refreshButton->setShortcut(QKeySequence::Refresh);
    refreshButton->setToolTip(tr("Read the run store again (%1)").arg(QKeySequence(QKeySequence::Refresh).toString(QKeySequence::NativeText)));
    connect(refreshButton, &QPushButton::clicked, this, &RunsPage::refresh);

    m_summary = new QLabel(this);
    m_summary->setObjectName(QStringLiteral("runsSummary"));
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setWordWrap(true);

    auto *top = new QHBoxLayout;
    top->addWidget(m_summary, 1);
    top->addWidget(refreshButton);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(m_view, 1);

    refresh();
}

void RunsPage::setStorePath(const QString &storePath)
{
    m_storePath = storePath;
    refresh();
}

void RunsPage::refresh()
{
    const QString shownPath = QDir::toNativeSeparators(m_storePath);
    if (m_storePath.isEmpty() || !QFileInfo::exists(m_storePath)) {
        // Opening would create the database; an empty list says the same without writing anything.
        m_model->setRuns({});
        m_summary->setText(tr("No runs yet. Runs are recorded in %1.").arg(shownPath));
        return;
    }
    try {
        auto store = engine::store::RunStore::open(m_storePath.toStdString());
        m_model->setRuns(store.listRuns());
        const int count = m_model->rowCount();
        m_summary->setText(count == 1 ? tr("1 run in %1").arg(shownPath) : tr("%1 runs in %2").arg(count).arg(shownPath));
        m_view->resizeColumnsToContents();
    } catch (const std::exception &e) {
        m_model->setRuns({});
        const QString message = tr("Cannot read the run store: %1").arg(QString::fromStdString(e.what()));
        m_summary->setText(message);
        Q_EMIT statusMessage(message);
    }
}

} // namespace ui
