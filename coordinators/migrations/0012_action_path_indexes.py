# The action path's tables lose the indexes that another index already leads with, and PostgreSQL's
# `_like` indexes on ids (ADR 0043). Dropped by name: an AlterField would rebuild each table on SQLite.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from kernel.schema_ops import drop_column_indexes


class Migration(migrations.Migration):

    dependencies = [
        ('coordinators', '0011_purge_indexes'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='coordinatoraction',
                    name='external_id',
                    field=models.CharField(blank=True, help_text="the launched run's id (read with the action's id)", max_length=255),
                ),
                migrations.AlterField(
                    model_name='coordinatoraction',
                    name='job',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='actions', to='coordinators.coordinatorjob'),
                ),
                migrations.AlterField(
                    model_name='coordinatorjob',
                    name='owner',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='coordinator_jobs', to=settings.AUTH_USER_MODEL),
                ),
                migrations.AlterField(
                    model_name='coordinatorjob',
                    name='status',
                    field=models.CharField(choices=[('PREP', 'Prep'), ('RUNNING', 'Running'), ('RUNNINGWITHERROR', 'Runningwitherror'), ('PREPSUSPENDED', 'Prepsuspended'), ('SUSPENDED', 'Suspended'), ('SUSPENDEDWITHERROR', 'Suspendedwitherror'), ('PREPPAUSED', 'Preppaused'), ('PAUSED', 'Paused'), ('PAUSEDWITHERROR', 'Pausedwitherror'), ('SUCCEEDED', 'Succeeded'), ('DONEWITHERROR', 'Donewitherror'), ('KILLED', 'Killed'), ('FAILED', 'Failed'), ('IGNORED', 'Ignored')], default='PREP', max_length=20),
                ),
            ],
            database_operations=[
                drop_column_indexes(
                    indexed=[
                        ("coordinators_coordinatoraction", "external_id"),
                        ("coordinators_coordinatoraction", "job_id"),
                        ("coordinators_coordinatorjob", "owner_id"),
                        ("coordinators_coordinatorjob", "status"),
                    ],
                    pattern=[
                        ("coordinators_coordinatoraction", "id"),
                        ("coordinators_coordinatorjob", "id"),
                        ("coordinators_coordinatorjob", "app_name"),
                        ("coordinators_coordinatorjob", "bundle_id"),
                    ],
                ),
            ],
        ),
    ]
