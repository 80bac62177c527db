# The action path's tables lose the index that another index already leads with, and PostgreSQL's
# `_like` indexes on ids (ADR 0043). Dropped by name: an AlterField would rebuild the table on SQLite.

import django.db.models.deletion
from django.db import migrations, models

from kernel.schema_ops import drop_column_indexes


class Migration(migrations.Migration):

    dependencies = [
        ('coordinators', '0012_action_path_indexes'),
        ('workflows', '0005_fork_transition_of_any_width'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='workflowjob',
                    name='coord_action',
                    field=models.ForeignKey(blank=True, db_index=False, help_text='the coordinator action that launched it (its parent)', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='workflow_runs', to='coordinators.coordinatoraction'),
                ),
            ],
            database_operations=[
                drop_column_indexes(
                    indexed=[("workflows_workflowjob", "coord_action_id")],
                    pattern=[
                        ("workflows_workflowjob", "id"),
                        ("workflows_workflowjob", "parent_workflow_id"),
                        ("workflows_workflownode", "id"),
                        ("workflows_workflownode", "workflow_id"),
                    ],
                ),
            ],
        ),
    ]
