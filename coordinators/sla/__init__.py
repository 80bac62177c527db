"""SLA monitoring of coordinator actions (DG_SLAMonitoring): `<sla:info>` 0.1 and 0.2.

- `rules`: event and status names and the pure decision function (no Django, no clock);
- `evaluate`: the SLA block evaluated when an action is created (pure);
- `models`: one record per action with an SLA, and its events;
- `service`: registration at materialization, the checker run by celery beat, reruns;
- `notify`: e-mail to alert-contact and the SLA webhook, with retries.
"""
