//! One store test suite, run against every backend: each test of `suite/` once for SQLite and
//! once for PostgreSQL.
//!
//! The PostgreSQL part runs on the server `HOOKS_MCP_TEST_DATABASE_URL` names (CI's `.ci/run`
//! starts a throwaway server and sets it; when set and unreachable its tests fail). When it is
//! unset and PostgreSQL's server programs are installed, the first PostgreSQL test starts a
//! private throwaway server that the tests of this process share and that stops when the
//! process ends; with no server programs either, `postgres_part_status` says on stderr that the
//! part was not run. Child processes of the
//! multi-process tests enter through `child_writer`, `child_audit_writer` and `child_fire_due`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;

/// Generates `sqlite::<module>::<test>` and `postgres::<module>::<test>` for each test.
macro_rules! backend_suite {
    ($($module:ident: [$($test:ident),* $(,)?]),* $(,)?) => {
        mod sqlite {
            $(mod $module {
                $(#[test]
                fn $test() {
                    crate::suite::$module::$test(&crate::suite::Sqlite);
                })*
            })*
        }

        #[cfg(feature = "postgres")]
        mod postgres {
            $(mod $module {
                $(#[test]
                fn $test() {
                    // Without a server this part is skipped (see `postgres_part_status`).
                    if let Some(backend) = crate::suite::Postgres::from_env() {
                        crate::suite::$module::$test(&backend);
                    }
                })*
            })*
        }
    };
}

backend_suite! {
    admin: [
        a_fresh_store_has_the_current_schema_and_reopening_keeps_it,
        a_newer_schema_is_refused_unchanged,
        a_version_1_store_is_migrated_to_the_current_schema,
        a_version_2_store_gets_its_counters_and_marks,
        a_version_3_store_gets_the_daemons_state,
        a_version_5_store_migrates_and_only_postgres_gets_the_expiry_index,
        a_version_6_store_counts_a_call_reported_twice_once,
        a_version_4_store_gets_the_sessions_lifecycle,
        an_older_store_without_its_tables_is_left_for_verification,
        an_empty_store_is_missing_without_create,
        verify_reports_a_dropped_table,
        concurrent_first_opens_create_the_schema_once,
        the_change_version_moves_when_another_handle_publishes_or_clears,
    ],
    channels: [
        the_next_expiry_is_the_earliest_still_ahead,
        publish_returns_the_stored_message,
        read_is_newest_first_filtered_limited_and_skips_expired,
        pages_follow_the_cursor_without_gaps_or_repeats,
        read_hides_or_marks_what_the_session_acknowledged,
        channels_count_active_messages_by_name,
        acknowledge_refuses_unknown_and_expired_ids_and_accepts_repeats,
        clear_deletes_by_scope_with_acks_and_deliveries,
        clear_counts_only_unexpired_messages_and_deletes_expired_ones_too,
        prune_removes_only_expired_messages_and_their_records,
        info_is_delivered_once_per_session_and_recorded,
        alert_repeats_every_prompt_until_acknowledged,
        critical_is_delivered_at_tool_calls_too_until_acknowledged,
        expired_messages_are_never_delivered,
        delivery_respects_the_channel_list,
        session_state_holds_across_handles,
        a_new_session_receives_its_budget_and_a_count_of_the_rest,
    ],
    push: [
        only_new_unacknowledged_urgent_messages_are_pushed_in_id_order,
        pushes_follow_the_channel_list,
        a_message_to_one_session_is_pushed_to_it_alone,
        a_cursor_never_passes_a_message_still_being_published,
    ],
    daemon_state: [
        signing_keys_are_made_once_shared_rotated_and_retired,
        concurrent_first_callers_agree_on_one_key,
        http_sessions_are_resumed_from_any_handle_deleted_and_pruned,
        a_lease_has_one_holder_until_it_is_given_up,
    ],
    enforcement_conditions: [
        reminders_round_trip_and_clear_by_id_and_tag,
        zero_cadence_is_rejected_by_the_schema,
        tool_call_counters_are_per_session,
        concurrent_tool_calls_get_distinct_numbers,
        put_condition_creates_refuses_duplicates_and_replaces_keeping_created_at,
        delete_condition_reports_whether_it_existed,
        gate_opens_until_expiry_per_session_and_disarms,
    ],
    scheduler: [
        create_list_and_cancel,
        fire_due_publishes_and_advances_once,
        a_recorded_occurrence_is_never_published_again,
        fire_due_is_exactly_once_across_processes,
    ],
    multiprocess: [
        concurrent_processes_lose_no_writes,
    ],
    fleet: [
        every_change_writes_its_audit_entry,
        the_audit_trail_pages_filters_and_prunes,
        the_recent_audit_trail_is_newest_first_and_pages_backwards,
        unacknowledged_alerts_count_what_was_delivered_and_not_acknowledged,
        sightings_build_session_records,
        a_delivery_report_counts_live_subscribed_sessions,
        killed_writers_leave_every_change_with_its_entry,
    ],
    lifecycle: [
        an_ended_session_is_not_live_until_it_is_seen_again,
        a_subagent_is_its_own_recipient_and_ends_with_its_parent,
        a_start_delivers_unacknowledged_alerts_again_and_no_info,
        a_stop_shows_what_the_turn_published_once,
        concurrent_stops_show_a_message_once,
        a_message_to_one_session_reaches_it_alone,
        a_message_to_one_session_has_its_own_delivery_report,
    ],
    model: [
        operations_agree_with_the_model,
        model_boundaries_at_the_instant_of_expiry,
        model_pages_and_counts_a_busy_channel,
    ],
}

/// What only PostgreSQL has (run when the suite's server is set, like the rest of that part).
#[cfg(feature = "postgres")]
mod postgres_only {
    macro_rules! pg_tests {
        ($($test:ident),* $(,)?) => {$(
            #[test]
            fn $test() {
                if let Some(backend) = crate::suite::Postgres::from_env() {
                    crate::suite::pg_only::$test(&backend);
                }
            }
        )*};
    }

    pg_tests!(
        a_search_path_of_no_existing_schema_names_the_schema_to_create,
        describe_and_errors_never_show_the_password,
        a_refused_client_is_told_to_fix_its_settings,
        an_open_store_describes_itself_without_the_password,
        the_change_feed_reports_publications_and_schedule_changes,
        a_server_restart_fails_calls_clearly_and_loses_nothing,
        the_pool_is_bounded,
        running_out_of_server_connections_is_clear_and_recovers,
    );
}

/// Says how the PostgreSQL part ran, or that it did not. Written straight to stderr (not
/// captured by the test harness) so that a run without a server says so.
#[test]
fn postgres_part_status() {
    use std::io::Write;
    use test_support::pg::{
        TEST_DATABASE_URL_ENV, no_server_note, server_bindir, uses_private_server,
    };
    let set = std::env::var(TEST_DATABASE_URL_ENV).is_ok_and(|v| !v.trim().is_empty());
    let note = match (set, cfg!(feature = "postgres")) {
        (true, true) => return,
        (true, false) => panic!(
            "{TEST_DATABASE_URL_ENV} is set but the store was built without its `postgres` feature"
        ),
        (false, true) if uses_private_server() => format!(
            "note: {TEST_DATABASE_URL_ENV} is unset: the PostgreSQL part of the store suite ran \
             on a private throwaway server ({})\n",
            server_bindir().unwrap_or_default().display()
        ),
        (false, true) => no_server_note("the PostgreSQL part of the store suite was"),
        (false, false) => {
            "note: the store was built without PostgreSQL: only SQLite was tested\n".to_string()
        }
    };
    let _ = std::io::stderr().write_all(note.as_bytes());
}

/// Child process of `concurrent_processes_lose_no_writes` (does nothing when run directly).
#[test]
fn child_writer() {
    let (Ok(spec), Ok(worker)) = (
        std::env::var(suite::multiprocess::STORE_ENV),
        std::env::var(suite::multiprocess::WORKER_ENV),
    ) else {
        return;
    };
    suite::multiprocess::child_writer(suite::open_spec(&spec), &worker);
}

/// Child process of `killed_writers_leave_every_change_with_its_entry` (does nothing when run
/// directly).
#[test]
fn child_audit_writer() {
    let (Ok(spec), Ok(worker)) = (
        std::env::var(suite::fleet::STORE_ENV),
        std::env::var(suite::fleet::WORKER_ENV),
    ) else {
        return;
    };
    suite::fleet::child_audit_writer(suite::open_spec(&spec), &worker);
}

/// Child process of `fire_due_is_exactly_once_across_processes` (does nothing when run
/// directly).
#[test]
fn child_fire_due() {
    let (Ok(spec), Ok(go)) = (
        std::env::var(suite::scheduler::STORE_ENV),
        std::env::var(suite::scheduler::GO_ENV),
    ) else {
        return;
    };
    suite::scheduler::child_fire_due(suite::open_spec(&spec), std::path::Path::new(&go));
}
