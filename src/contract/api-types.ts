// The types of the HTTP contract, generated from schema/ by
// `npm run contract:types` (openapi-typescript). Do not edit: change schema/
// and run the command again.

export interface paths {
    "/analytics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Counts of email events over a time range, in total and as a series. Counts only, never rates.
         * @description Counts the workspace's events by kind: `sent`, `delivered`,
         *     `bounced`, `opened`, `clicked`, `complained`, `failed` and `delayed`
         *     count events of that type (per recipient where the event is per
         *     recipient; every open and click, repeated ones included).
         *     `unique_opened` and `unique_clicked` count each (email, recipient)
         *     pair once, in the period of its first open (click): an email first
         *     opened before `from` adds nothing to `unique_opened` of the range.
         *     Unique counts therefore add up across the series.
         *
         *     The range is `from` (inclusive) to `to` (exclusive), widened to whole
         *     UTC hours; the answer's `from` and `to` are the range counted. `to`
         *     defaults to now and `from` to 7 days before `to`. `from` must be
         *     before `to`, and the range is at most 31 days with granularity `hour`
         *     and 400 days with `day` (else 400).
         *
         *     Live and test mail are counted apart: `mode` is `live` by default,
         *     `test` for the mail of test keys, and the answer says which.
         *
         *     `series` has one bucket per UTC hour or day (default `day`), zeros
         *     included, the first and last cut to the range. `domain_id` counts the
         *     events of mail from one sending domain; `tags` the events of emails
         *     carrying any of the tags (an email with several of them counts once).
         *
         *     Answers are exact up to the latest event: hourly rollups are kept by
         *     a background fold and the events it has not reached yet are added at
         *     read time.
         */
        get: operations["getAnalytics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the workspace's API keys (tokens masked), newest first. */
        get: operations["listApiKeys"];
        put?: never;
        /**
         * Create a key. The raw token is in this response only.
         * @description Scopes default to full_access. A key may grant only scopes it holds itself (every fine scope they amount to, and full_access only from a full-access key); asking for more is 403. The mode defaults to the calling key's. The live/test split is a security boundary: a test key creates test keys only, and asking it for a live key is 403 (recorded in its activity trail like every other write). Under an Idempotency-Key, this response (the token with it) is kept sealed for 24 hours, so a retry that lost the first answer gets the same key rather than a second one; without the header the token is never stored, only its keyed hash.
         */
        post: operations["createApiKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api-keys/current": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The key making this request - what it is and what it may do.
         * @description Any valid key may read itself; no scope is needed. It exists so that a client holding only a token (the dashboard, a CI job) can learn its key's id, workspace, mode and scopes without `api_keys:read`, and offer only the actions the key may take. `effective_scopes` spells out what `full_access` and `sending_access` amount to. The token, even masked, is not part of it. Key ids start `key_`, so this path never names a key.
         */
        get: operations["getCurrentApiKey"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api-keys/{key_id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                key_id: string;
            };
            cookie?: never;
        };
        /** One key (token masked). */
        get: operations["getApiKey"];
        put?: never;
        post?: never;
        /**
         * Revoke a key; it stops working at once and stays listed with revoked_at.
         * @description A key may always revoke itself. Any other key it may revoke only if it could grant that key's scopes (as in createApiKey): a key holding `api_keys:write` without `full_access` cannot revoke a full-access key, nor one with a scope it lacks, and the attempt is 403 `forbidden`. A test key may revoke only test keys (403 `forbidden` for a live key), as it may create only test keys.
         */
        delete: operations["revokeApiKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api-keys/{key_id}/activity": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                key_id: string;
            };
            cookie?: never;
        };
        /**
         * The audit trail of a key - every write it made, newest first.
         * @description A POST that stores nothing (a template's or a broadcast's preview or render, an audience count, `POST /v1/emails/check`) is not a write and is not listed. A row is written just after its response is sent, so it may take a few milliseconds to appear. Calls made one after another through one node are listed in the order they were made. Rows are kept 90 days.
         */
        get: operations["listApiKeyActivity"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/attachments": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Upload a file once, to attach to sends by attachment_id.
         * @description The file is given in base64 with its file name; the content type
         *     defaults to one derived from the name (application/octet-stream when
         *     unknown). At most 10 MiB once decoded: a larger file is 422 (a request
         *     body over 32 MiB is 413). The upload can be referenced from sends
         *     (`attachments[].attachment_id`) for 24 hours (`expires_at`); a send
         *     copies it into the email, so a scheduled email keeps its attachment
         *     after the upload expires. Expired uploads are deleted hourly, and a
         *     send that names one gets 422.
         */
        post: operations["createAttachment"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/broadcasts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the workspace's broadcasts, newest first.
         * @description The list items carry their live `stats`. Scope `broadcasts:read`.
         */
        get: operations["listBroadcasts"];
        put?: never;
        /**
         * Create a broadcast, as a draft.
         * @description A broadcast is one message to an audience: every subscribed contact
         *     of the workspace that is not deleted and not suppressed, narrowed by
         *     `audience`. A draft may be incomplete; `POST /broadcasts/{id}/send`
         *     checks that it can go out.
         *
         *     Content is `html` and/or `text`, or `template` (a template's id or
         *     alias, and a version; without one the version published when
         *     sending starts). When sending starts, `template` becomes the
         *     template's id and that version, so every contact gets the same
         *     content whatever is published, or whichever template takes the
         *     alias, meanwhile. Both are Liquid, rendered for each contact with
         *     `contact.email`, `contact.name`, `contact.first_name`,
         *     `contact.last_name`, `contact.properties.<key>` and
         *     `unsubscribe_url`; a template's declared variables take their
         *     fallbacks. Sources are checked when saved (422 `template_invalid`,
         *     every problem in `problems`). `subject`, `from` and `reply_to` given
         *     here win over a template version's. `preview_text` is put at the top
         *     of the HTML, hidden, where mail clients show it beside the subject.
         *
         *     Every email of a broadcast carries RFC 8058 one-click unsubscribe
         *     headers for its contact, and when the rendered HTML or text does not
         *     contain the contact's `unsubscribe_url`, a short line with the link
         *     is added at its end. Scope `broadcasts:write`.
         */
        post: operations["createBroadcast"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/broadcasts/{broadcast_id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        /**
         * One broadcast, with its live stats.
         * @description Scope `broadcasts:read`.
         */
        get: operations["getBroadcast"];
        put?: never;
        post?: never;
        /**
         * Delete a draft.
         * @description Only a draft can be deleted (422 `broadcast_not_editable`); cancel a scheduled one first. Scope `broadcasts:write`.
         */
        delete: operations["deleteBroadcast"];
        options?: never;
        head?: never;
        /**
         * Change a draft or scheduled broadcast.
         * @description Fields as on create; null clears an optional one. Giving `html` or
         *     `text` clears `template`, and giving `template` clears both. A
         *     broadcast that is sending, paused, sent or cancelled cannot change
         *     (422 `broadcast_not_editable`). A scheduled broadcast stays one that
         *     can go out: its edit is checked as `POST /broadcasts/{id}/send`
         *     checks (422 as there: no `from`, a domain that may not send, content
         *     that does not render or makes an email that would be refused); a
         *     draft may be incomplete. Scope `broadcasts:write`.
         */
        patch: operations["updateBroadcast"];
        trace?: never;
    };
    "/broadcasts/{broadcast_id}/skipped": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        /**
         * The broadcast's contacts that got no email, and why, newest first.
         * @description A contact of the audience gets no email when its message cannot be
         *     made: `render_failed` (the content's Liquid fails with that
         *     contact's data, or a part's output is over 5,000,000 characters),
         *     `invalid_address` (the contact's address is not one an email can
         *     go to, such as a domain whose ASCII form has a label over 63
         *     characters), `invalid_subject` (the subject rendered for it holds
         *     a control character, or is over 998 characters, as a subject given
         *     to `POST /v1/emails` may not be) or `message_too_large` (its html and text are
         *     over 25 MiB); `message` says what failed and what to change. Each
         *     is recorded once, with the chunk it was in, and counted in
         *     `stats.skipped`. A render that runs out of time is not a skip, nor
         *     is an email refused for what every contact's email shares (its
         *     `from`, its `reply_to`): either pauses the broadcast. Contacts left
         *     out because they are suppressed get their email, `suppressed`.
         *     Scope `broadcasts:read`.
         */
        get: operations["listBroadcastSkips"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/broadcasts/{broadcast_id}/audience": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * How many contacts the audience holds now, and the first of them.
         * @description For the broadcast's audience, or for `audience` in the body (an
         *     editor's live count before saving). Once sending has started the
         *     audience is fixed: the count is the number of contacts it was fixed
         *     with. Scope `broadcasts:read`.
         */
        post: operations["previewBroadcastAudience"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/broadcasts/{broadcast_id}/preview": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * The broadcast rendered for one contact, as that contact would get it.
         * @description Nothing is sent or stored. `empty_fields` names the contact fields
         *     the content writes that this contact lacks, so that they can be
         *     given a fallback. A broadcast without content is 422
         *     `broadcast_incomplete`; a render that fails, 422
         *     `template_render_failed`. Scope `broadcasts:read`.
         */
        post: operations["previewBroadcast"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/broadcasts/{broadcast_id}/test": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send the broadcast to up to five addresses, as a test.
         * @description Each address gets the message rendered as its contact when it is
         *     one, else with an empty `contact`; the subject starts with
         *     "[Test] ". These are ordinary emails (listed, readable, counted
         *     against the quota with a live key) tagged `broadcast_test`, and not
         *     part of the broadcast's stats. The sending domain must be active
         *     for a live key, as for any send. A retry under the same
         *     Idempotency-Key gets the first answer back and sends nothing again.
         *     Scope `broadcasts:write`.
         */
        post: operations["sendBroadcastTest"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/broadcasts/{broadcast_id}/send": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a draft now, or schedule it.
         * @description Checks that the broadcast can go out (422 `broadcast_incomplete`
         *     without `from`, a subject or content; `domain_not_verified` when the
         *     from domain is not active and the key is live; a render that fails
         *     for a sample contact; `validation_error` naming the field when the
         *     email rendered for it would be refused, such as a subject holding a
         *     control character or a message over 25 MiB; `validation_error`
         *     naming `audience.tag_ids.N` or `audience.exclude_tag_ids.N` when a tag
         *     of the audience was deleted since the draft was saved, rather than
         *     send to other contacts than the ones chosen, and `template.id` when
         *     its template was, even in the moment the send is asked; 422
         *     `broadcast_audience_empty`, naming `audience`, when sent now to an
         *     audience with no contact, which would use the draft up for nothing:
         *     the broadcast stays as it was), then makes it
         *     `scheduled` (with
         *     `scheduled_at`, ISO 8601 or "in 2 hours", as for emails) or
         *     `sending`. A scheduled broadcast can be sent again to move its time
         *     or to send it at once. The key's mode decides the broadcast's: a
         *     test key's broadcast goes to the sink.
         *
         *     When sending starts the audience is fixed: contacts added later do
         *     not get it. The audience is turned into ordinary emails, one per
         *     contact (`broadcast_id` and `contact_id` on each, and
         *     `GET /emails?broadcast_id=` lists them), in chunks whose progress
         *     is kept in the store, so a restart resumes where it stopped and no
         *     contact gets two. `send_rate_per_minute` paces how fast emails are
         *     made; each destination's delivery limits apply as to any email.
         *     Each email counts against the send quota, which the broadcast uses
         *     to the last email, whatever the workspace sends through the API
         *     meanwhile; when the quota runs out the broadcast is `paused` with a
         *     `status_reason` and resumes by itself after the quota resets. A
         *     contact's message whose render runs out of time is rendered again
         *     (the time may have gone to a loaded machine); out of time on each of
         *     3 tries, the broadcast is `paused` with a `status_reason` naming the
         *     contact, and a resume tries again.
         *
         *     A retry under the same Idempotency-Key gets the first answer back,
         *     where without one it would find the broadcast no longer a draft
         *     (422). Scope `broadcasts:write`.
         */
        post: operations["sendBroadcast"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/broadcasts/{broadcast_id}/pause": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Pause a sending broadcast.
         * @description No more of its emails are made until it is resumed; emails made
         *     already go on as usual. Only a `sending` broadcast can be paused
         *     (422 `broadcast_not_sending`). Scope `broadcasts:write`.
         */
        post: operations["pauseBroadcast"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/broadcasts/{broadcast_id}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Resume a paused broadcast.
         * @description It goes on from where it stopped, with the audience fixed when it
         *     started. A broadcast paused because the send quota ran out may be
         *     resumed early; it pauses again if the quota is still used up. Only
         *     a `paused` broadcast can be resumed (422 `broadcast_not_paused`).
         *     Scope `broadcasts:write`.
         */
        post: operations["resumeBroadcast"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/broadcasts/{broadcast_id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel a draft, scheduled, sending or paused broadcast.
         * @description No email not yet made is made. Its emails still waiting for their
         *     send delay are cancelled, as `POST /emails/{id}/cancel` would;
         *     emails already handed to delivery go on. A sent or cancelled
         *     broadcast is 422 `broadcast_not_cancellable`. Scope
         *     `broadcasts:write`.
         */
        post: operations["cancelBroadcast"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/contacts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the workspace's contacts, newest first. Deleted contacts are not listed.
         * @description `email` is a case-insensitive substring match on the address (in NFC). `tag_id`
         *     keeps contacts that have that tag (an unknown tag id gives an empty
         *     list). `created_after` and `created_before` are exclusive bounds.
         *     Repeat the same filters on every request of a cursor walk.
         */
        get: operations["listContacts"];
        put?: never;
        /**
         * Create a contact.
         * @description The address is trimmed, lower-cased as a whole and put in Unicode
         *     NFC (an ö written as o and a combining mark is the one ö), then validated (a
         *     dot-atom local part, UTF-8 letters allowed, and a domain of at least two
         *     labels whose ASCII form (IDNA) is a DNS name, as sending checks it;
         *     quoted local parts and address literals are refused). A live
         *     contact with the same address in the workspace gives 422
         *     `already_exists`; a deleted one does not (a new contact is made).
         *     `tags` are tag names: missing tags are created. A new contact whose
         *     address is already suppressed starts `unsubscribed` (suppressed by an
         *     unsubscribe) or `cleaned` (by a hard bounce or complaint); a manual
         *     suppression leaves it `subscribed` but still blocks every send.
         *     The engagement tier is computed at once from the address's email history.
         *
         *     `properties` holds what a broadcast can read per contact
         *     (`{{ contact.properties.company }}`): names of a letter then
         *     letters, digits or `_` (50 at most), values strings of at most 500
         *     characters, finite numbers or booleans; at most 50 per contact. On
         *     create, upsert, bulk and update the given properties are merged into
         *     those the contact has, and a property given as null is removed; the
         *     limits are checked after the merge (422 `validation_error`, `param`
         *     naming the property).
         */
        post: operations["createContact"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/contacts/bulk": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create or update up to 1000 contacts by address, in one transaction.
         * @description Each item is a ContactCreate. Items are upserted by address: a new
         *     address creates a contact, a known one updates it (the name when given,
         *     the tag set when `tags` is given, its properties merged with those
         *     given; absent fields are kept). Invalid items (an item whose
         *     properties would pass 50 once merged among them)
         *     do not fail the request: they are counted in `failed` and listed in
         *     `errors` with their index, and the valid items are applied. An address
         *     repeated in the request is applied once, at its first occurrence; later
         *     ones fail with `duplicate_in_request`. More than 1000 items is 422 and
         *     nothing is applied. The whole request costs one unit of the rate limit.
         */
        post: operations["bulkUpsertContacts"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/contacts/by-email/{email}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The address, URL-encoded. */
                email: string;
            };
            cookie?: never;
        };
        get?: never;
        /**
         * Update the contact with this address, or create it. Answers 200 either way.
         * @description The address is normalised as in createContact; an invalid one is 422.
         *     Given fields replace the contact's (`tags` replaces the whole tag set;
         *     `properties` are merged, null removing one); absent fields are kept.
         *     Status is never changed here.
         */
        put: operations["upsertContactByEmail"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/contacts/{contact_id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                contact_id: string;
            };
            cookie?: never;
        };
        /** One contact with its tags, status and engagement tier. A deleted contact is 404. */
        get: operations["getContact"];
        put?: never;
        post?: never;
        /**
         * Soft-delete a contact.
         * @description The contact leaves lists and lookups (404 from then on) but its record,
         *     tags and history are kept. Suppressions of its address stay. Creating
         *     the address again makes a new contact with a new id.
         */
        delete: operations["deleteContact"];
        options?: never;
        head?: never;
        /**
         * Change the name or the tags of a contact.
         * @description `tags` (tag names; missing tags are created) replaces the whole tag set. `name: null` clears the name.
         */
        patch: operations["updateContact"];
        trace?: never;
    };
    "/contacts/{contact_id}/unsubscribe": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                contact_id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Unsubscribe a contact from future email.
         * @description Sets the status to `unsubscribed` and suppresses the address for the
         *     whole workspace (reason `unsubscribe`). A cleaned contact stays
         *     `cleaned`; an unsubscribed one is returned unchanged. The optional
         *     reason (at most 500 characters, else 422) is kept on the contact.
         */
        post: operations["unsubscribeContact"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/contacts/{contact_id}/tags/{tag_id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                contact_id: string;
                tag_id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Give a contact a tag (no change if it has it).
         * @description 404 names what is missing, the contact (param `contact_id`) or the tag (param `tag_id`).
         */
        post: operations["addContactTag"];
        /**
         * Take a tag off a contact (no change if it does not have it).
         * @description 404 names what is missing, the contact (param `contact_id`) or the tag (param `tag_id`).
         */
        delete: operations["removeContactTag"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/domains": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the workspace's sending domains, newest first. */
        get: operations["listDomains"];
        put?: never;
        /**
         * Add a sending domain; the response lists the DNS records to publish.
         * @description The name is trimmed, lower-cased, stripped of a trailing dot and
         *     converted to punycode (IDNA); it needs at least two labels, and IP
         *     addresses or a numeric last label are refused (422 `validation_error`).
         *     A name already in the workspace is 422 `already_exists`.
         *
         *     Two DKIM keys are made: RSA 2048 (selector `mr<yyyymm>`) and Ed25519
         *     (RFC 8463, selector `mr<yyyymm>e`); mail is signed with both once both
         *     are published. Private keys are stored encrypted.
         *
         *     Defaults: `region` `local` (a label; one Mailroom node sends all mail
         *     itself), `return_path` `bounces`, `tracking_subdomain` `track`,
         *     `open_tracking`, `click_tracking` and `inbound_enabled` false. The
         *     tracking subdomain must differ from the return path, since a CNAME
         *     cannot share its name with other records. The domain starts
         *     `unverified`; nothing is looked up until `POST /domains/{id}/verify`.
         */
        post: operations["createDomain"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/domains/{domain_id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                domain_id: string;
            };
            cookie?: never;
        };
        /** One domain, with its DNS records and the status of each. */
        get: operations["getDomain"];
        put?: never;
        post?: never;
        /**
         * Delete a domain and its keys.
         * @description Refused with 422 `domain_in_use` while the domain has emails not yet
         *     sent (pending or scheduled), and with 422 `last_active_domain` when it
         *     is the workspace's only active domain.
         */
        delete: operations["deleteDomain"];
        options?: never;
        head?: never;
        /**
         * Change the tracking settings or inbound mail of a domain.
         * @description Fields left out keep their value. Turning open or click tracking on
         *     adds the tracking CNAME to `records`, and changing
         *     `tracking_subdomain` makes that record pending until the next check;
         *     neither changes the domain's status, since the CNAME is not required.
         *     Turning `inbound_enabled` on adds the domain's own MX record (also
         *     not required). A bad value is 422 `validation_error`.
         */
        patch: operations["updateDomain"];
        trace?: never;
    };
    "/domains/{domain_id}/verify": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                domain_id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Look every record up in DNS now; returns the domain with per-record status.
         * @description Each record gets `verified`, `pending` (nothing published yet) or
         *     `failed` (something else is published; `detail` says what). Matching
         *     reads records as receivers do: TXT strings split in chunks are joined,
         *     SPF may list other mechanisms around ours, other TXT records may share
         *     the name, host names may end in a dot, case does not matter. A
         *     look-up that fails for a temporary reason (SERVFAIL, timeout) keeps
         *     the record's previous status, with `detail` "temporary DNS error".
         *
         *     Required records, all of which must be `verified` for the domain to be
         *     `active`: the RSA DKIM key (`DKIM`), the SPF record of the return path
         *     (`SPF`) and the MX of the return path (`MX_BOUNCE`, where bounces
         *     arrive). Optional: the Ed25519 DKIM key (`DKIM_ED25519`), `DMARC`
         *     (any valid policy counts), the domain's own MX when inbound is on
         *     (`MX_INBOUND`) and the tracking CNAME when tracking is on
         *     (`TRACKING`, pointing at the host of MAILROOM_PUBLIC_URL, or at
         *     MAILROOM_HOSTNAME when that URL names an IP address or a single label).
         *
         *     Status: `active` when every required record is verified; otherwise
         *     `verifying`, and the server keeps checking on its own 1, 6 and 21
         *     minutes, 1 h 21 min and 7 h 21 min after this call, then every 6 h;
         *     72 hours after this call without success the domain goes back to
         *     `unverified` (with `status_reason`) and checks stop until verify is
         *     called again. An `active` domain is checked again daily; if a
         *     required record stops matching it goes back to `verifying`, with
         *     `status_reason` naming the record, and the same schedule starts.
         */
        post: operations["verifyDomain"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/domains/{domain_id}/dkim/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                domain_id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Start a DKIM key rotation; returns the domain with the new key's records, pending.
         * @description Makes the next key pair (RSA-2048 and Ed25519) under new selectors and
         *     lists their records with `key_state: pending`. Nothing is signed with
         *     them yet: mail keeps being signed with the `active` key, so there is
         *     no gap while the new records propagate. Publish the new records (the
         *     old ones stay), then verify the domain (or let the scheduled checks
         *     find them): once the new RSA record is seen in DNS, the new pair
         *     becomes `active` and signs all mail from then on, and the old pair
         *     becomes `retiring`, with `removable_after` seven days later, after
         *     which its records may be deleted from DNS. Pending and retiring
         *     records are never required, so a rotation never makes an active
         *     domain inactive. A rotation already waiting for its records is 422
         *     `dkim_rotation_in_progress`; a new rotation forgets keys whose
         *     `removable_after` has passed.
         */
        post: operations["rotateDomainDkim"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/emails": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List emails, newest first, with filters.
         * @description `to`, `from` and `subject` match a part of the field, ignoring case:
         *     `to` any recipient address (to, cc or bcc), `from` the from field as
         *     given (display name included). `tags` matches emails with any of the
         *     given tags (repeat the parameter or separate with commas).
         *     `created_after` and `created_before` are exclusive bounds.
         *     `template_id` (an id or an alias) gives the emails made from that
         *     template; they keep its id after it is deleted. `broadcast_id` gives
         *     the emails of a broadcast, one per contact. `outcome` gives the emails
         *     with at least one recipient whose message `bounced` (the whole email,
         *     or some recipients of a delivered one) or who `complained`; the
         *     counts are in `bounced_recipients` and `complained_recipients`. The list
         *     items leave out the content (html, text, headers, attachments) and the
         *     per-recipient outcomes: GET /emails/{email_id} has them.
         */
        get: operations["listEmails"];
        put?: never;
        /**
         * Send an email (now, after the send delay, or at scheduled_at).
         * @description The sending domain is the domain of `from` (a display name is allowed:
         *     `Ann Lee <ann@example.com>`). A live key may only send from a domain of
         *     its workspace whose status is `active`; otherwise 422
         *     `domain_not_verified`, with a message naming the domain. A test key may
         *     send from any domain, and its emails never leave the server (below).
         *     On a server run with MAILROOM_DELIVERY=sink nothing leaves at all, so
         *     a live key may send from any domain too (a mail catcher); mail from a
         *     domain the workspace has is signed with its keys, other mail is kept
         *     unsigned, with `domain_id` null.
         *
         *     Recipients: `to`, `cc` and `bcc` take one address or an array, each
         *     entry a single mailbox with an optional display name, its local part
         *     a dot-atom or a quoted string (`"john doe"@example.com`, RFC 5321
         *     §4.1.2: printable characters and spaces, `"` and `\` escaped with a
         *     backslash, no `<` or `>`), carried as written; at most 50
         *     distinct recipients in all (422 otherwise). An address on the
         *     workspace's suppression list is not sent to: its recipient is
         *     `suppressed` and an `email.failed` event gives the reason. When every
         *     recipient is suppressed the email is `failed` at once.
         *
         *     Content: `html`, `text` or both (422 when neither), or `template`
         *     (below). `headers` adds
         *     custom header fields; the structural ones (From, To, Cc, Bcc,
         *     Reply-To, Subject, Date, Message-ID, MIME-Version, Content-*,
         *     DKIM-Signature, Return-Path, Received) cannot be set (422).
         *     `List-Unsubscribe` takes `<https://…>` and/or `<mailto:…>` (RFC 2369),
         *     and `List-Unsubscribe-Post: List-Unsubscribe=One-Click` makes it a
         *     one-click unsubscribe (RFC 8058, needs the https URI). Attachments are
         *     given inline (`content` in base64 with a `filename`) or by
         *     `attachment_id` from POST /attachments; an unknown or expired
         *     attachment_id is 422. html, text and attachments together are at most
         *     25 MiB once decoded.
         *
         *     Timing: without `scheduled_at` the email is `pending` for
         *     MAILROOM_SEND_DELAY seconds (default 10), during which it can be
         *     cancelled or rescheduled, then handed to delivery (`sent`).
         *     `scheduled_at` is an ISO 8601 date-time with an offset
         *     (`2026-11-21T09:30:00Z`) or a relative form such as `in 30 minutes`,
         *     `in 1 hour`, `in an hour`, `in 2 days` (units: seconds, minutes,
         *     hours, days, weeks); at most 30 days ahead; a time more than a minute
         *     in the past is 422, one within the last minute means now. A scheduled
         *     email is `scheduled` until its time, then handed to delivery within
         *     about a second, with no further delay.
         *
         *     Status: `scheduled` → `pending` → `sent` → `delivered` | `failed`;
         *     `cancelled` from `scheduled` or `pending`. Each recipient has its own
         *     outcome (`recipients[].status`); the email's status is their
         *     aggregate: `sent` while any recipient is queued or deferred, then
         *     `delivered` when at least one recipient accepted the message and
         *     `failed` when none did. Every change writes an event (GET
         *     /emails/{email_id}/events).
         *
         *     Test keys and the sink: emails sent with a test key (and every email
         *     when the server runs with MAILROOM_DELIVERY=sink) are built, signed
         *     and kept, never sent. Recipients on the test domain `mailroom.test`
         *     get a simulated outcome by local part (a `+tag` is ignored):
         *     `delivered@mailroom.test` is accepted; `bounced@mailroom.test` gets a
         *     hard bounce (550 5.1.1); `delayed@mailroom.test` is deferred (451
         *     4.7.1, an `email.delayed` event) and accepted on the retry, on the
         *     normal retry schedule (about 5 minutes later); `complained@mailroom.test`
         *     is accepted and then reported as a complaint (`email.complained`). Any
         *     other address is accepted. Simulated outcomes never add suppressions.
         *
         *     By template: `template: {id, version?, variables}` (id or alias)
         *     instead of `html`/`text` (422 when both are given). Without
         *     `version` the published version is used (422
         *     `template_not_published` when none is). `variables` are checked
         *     against the version's declarations: a required one missing, a
         *     value of the wrong type, or one whose lists and objects nest more
         *     than 32 deep is 422 `template_variables_invalid`, naming
         *     each in `problems` (`param` `template.variables.<name>`); a missing
         *     optional one takes its fallback; values of undeclared names are
         *     ignored. `contact` is filled from the contact of the recipient when
         *     there is exactly one `to` address and a contact has it (`id`,
         *     `email`, `name`, `first_name`, `last_name`), else it is empty;
         *     `unsubscribe_url` is the recipient's Mailroom unsubscribe page when
         *     the email has exactly one recipient, else "". Neither can be given
         *     in `variables` (422). `subject`, `from` and `reply_to` in the
         *     request win over the version's; without either, `from` is 422. The
         *     email is rendered now and stored rendered, with `template_id` and
         *     `template_version`: it never changes when the template does, and a
         *     resend sends the same content. The text part is the version's text,
         *     or derived from the rendered HTML (links as `text [url]`) when it
         *     has none. A render over the limits is 422 `template_render_failed`,
         *     as is a rendered subject over 998 characters (a given one is held to
         *     the same length); an unknown template is 422 (`param` `template.id`).
         *
         *     Quotas: each live email (not each recipient) counts against the
         *     workspace's daily (UTC day) and monthly (UTC month) send quotas, in
         *     the same transaction as the email; over the daily quota 429
         *     `daily_quota_exceeded` with Retry-After (seconds to the next UTC
         *     midnight), over the monthly quota 429 `monthly_quota_exceeded`
         *     without Retry-After. Test-key emails do not count.
         */
        post: operations["createEmail"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/emails/check": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Score an email for spam without sending it.
         * @description Takes the same creation object as POST /emails (and checks it the
         *     same way, but a payload that could not be sent is 400 here) and sends
         *     nothing. Each rule that fires adds its points to `score`; at
         *     `threshold` (5) or more the message reads as spam (`spam: true`).
         *     `rules` lists the rules that fired with their points, and
         *     `suggestions` the fix for each, in the same order, quoting what was
         *     found ("Reword 'FREE MONEY' in the subject"). Every part is read:
         *     the subject, the text and the HTML (its visible words, and text it
         *     hides). The rules look at the sending domain (verified or not, DMARC
         *     published at its last check), images against words, capitals and
         *     runs of exclamation marks, phrases common in spam, link shorteners
         *     (SpamAssassin's maintained list), links whose text shows another
         *     address or names a well-known brand while leading elsewhere, links
         *     to bare IP addresses, the number of links, executable attachments,
         *     HTML over Gmail's 102 KB clipping size, a From display name naming
         *     another domain, and List-Unsubscribe: missing, or not a list of
         *     <https:…>/<mailto:…> addresses. Mail that looks like bulk (10 or
         *     more recipients, or a List-Id or Precedence: bulk header) must also
         *     offer RFC 8058 one-click unsubscribe and a visible unsubscribe link,
         *     as Gmail's and Yahoo's bulk-sender rules ask.
         */
        post: operations["checkEmail"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/emails/batch": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send up to 100 emails in one request.
         * @description Each item is an email creation object as for POST /emails, with the
         *     same rules, and each is checked on its own: an item that does not
         *     fit the schema (a missing `to`, an unknown field, a malformed
         *     address) or cannot be sent (a domain that is not verified, an
         *     expired attachment_id, a template's variables that do not fit its
         *     declarations, …) fails alone and is not sent, while the others are.
         *     The response is 200 with one result per item, in order: `id` for the
         *     emails created, `error` (code, message, param relative to the item)
         *     for the others. Only an envelope that is itself wrong is refused
         *     whole: not JSON, `emails` missing or not a list of objects, none or
         *     more than 100 items (422).
         *
         *     Items sent by template share one second of render time and
         *     20,000,000 characters of rendered emails (subjects, html and text, a
         *     text derived from html included): an item that would take the batch
         *     past either fails alone
         *     with 422 `template_render_failed` (`param` `template`), and may be
         *     sent in another request.
         *
         *     With the header `Mailroom-Batch-Validation: strict` the batch is all
         *     or nothing: the first item that fails refuses the whole batch with
         *     its error, `param` naming the item (`emails.3.from`), and nothing is
         *     sent. `partial` is the default; any other value is 400. The created emails are written in one
         *     transaction, and the send quota is taken for all of them or none (429
         *     for the whole batch when it does not fit). One Idempotency-Key covers
         *     the whole batch, and this header is part of the request it names: the
         *     same body sent under the same key first as strict, then as partial
         *     (or without the header), is 409 `idempotency_conflict`. Rate limit: a batch costs one request per started ten
         *     emails (a full batch costs 10, not 100).
         */
        post: operations["createEmailBatch"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/emails/{email_id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                email_id: string;
            };
            cookie?: never;
        };
        /**
         * One email, with its content and per-recipient outcomes.
         * @description An email is kept until the server's retention period (`MAILROOM_EMAIL_RETENTION_DAYS`, forever by default) has passed since it was sent; then it is deleted with its events, and this answers 404.
         */
        get: operations["getEmail"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Reschedule an email that has not been handed to delivery.
         * @description Only `scheduled_at` can be changed, in the forms POST /emails takes,
         *     and only while the email is `pending` or `scheduled`; otherwise 422
         *     `invalid_state`. A time in the future makes the email `scheduled`; a
         *     time that is now (or within the last minute) hands it to delivery at
         *     once, without the send delay.
         */
        patch: operations["updateEmail"];
        trace?: never;
    };
    "/emails/{email_id}/raw": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                email_id: string;
            };
            cookie?: never;
        };
        /**
         * The source of a sent message, as the sink kept it (an .eml file).
         * @description The message exactly as it was built and DKIM-signed for delivery, with
         *     its headers. Mailroom keeps it for mail delivered to the sink: every
         *     email of a test key, and every email with MAILROOM_DELIVERY=sink (the
         *     local mail catcher); mail delivered to real servers is not kept, and
         *     answers 404, as does an email not delivered yet.
         */
        get: operations["getEmailRaw"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/emails/{email_id}/attachments/{index}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                email_id: string;
                /** @description The attachment's place in the email's `attachments` (from 0). */
                index: number;
            };
            cookie?: never;
        };
        /**
         * Download one attachment of a sent email.
         * @description The file as it was given, inline or from an upload (kept with the
         *     email for as long as the email is, not only the upload's 24 hours),
         *     with its media type and its file name in Content-Disposition. It is
         *     always served as a download (`attachment`, with
         *     `X-Content-Type-Options: nosniff`), never rendered. An email of
         *     another workspace, or an index it does not have, is 404. Scope
         *     `emails:read`.
         */
        get: operations["getEmailAttachment"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/emails/{email_id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                email_id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel an email that has not been handed to delivery.
         * @description A `scheduled` email, and a `pending` one (in the send delay after it
         *     was created, or due and waiting for a delivery worker), is cancelled:
         *     its queued messages are dropped, its open recipients become
         *     `cancelled` and an `email.cancelled` event is written. Once a worker
         *     has taken the email (`sent`) a message may be on the wire, so the
         *     answer is `cancelled: false` with the current status; the same for
         *     `delivered` and `failed`. Cancelling a cancelled email answers
         *     `cancelled: true` again.
         */
        post: operations["cancelEmail"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/emails/{email_id}/resend": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                email_id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a copy of a sent, delivered or failed email as a new email.
         * @description The new email has its own id, the same content, recipients, headers,
         *     tags and attachments, `resent_from` set to the original, and goes
         *     through the same rules as POST /emails with the calling key (domain
         *     check, suppressions, quota, send delay). An email that is scheduled,
         *     pending or cancelled cannot be resent: 422 `invalid_state`.
         */
        post: operations["resendEmail"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/emails/{email_id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                email_id: string;
            };
            cookie?: never;
        };
        /**
         * The timeline of one email, newest first.
         * @description Event types written by sending and delivery: `email.scheduled`
         *     (created for later or rescheduled), `email.queued` (waiting out the
         *     send delay), `email.sent` (handed to delivery), `email.delivered`,
         *     `email.delayed` (a temporary failure; retried), `email.bounced`,
         *     `email.complained`, `email.failed` (a recipient will not be sent to:
         *     suppressed, or delivery gave up) and `email.cancelled`; tracking adds
         *     `email.opened` and `email.clicked`. Per-recipient
         *     events carry `to` as one address; events about the whole email carry
         *     the `to` field as given. `smtp_code` is null when no server replied
         *     (a DNS or connection failure). Temporary failures are retried on a
         *     schedule of 5, 10, 20, 40 minutes, 1, 2, 3 hours, then every 3 hours
         *     (with jitter, or later when the server asks for it); after 5 days the
         *     recipient gets a soft `email.bounced` and an `email.failed`.
         */
        get: operations["listEmailEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The email events of the whole workspace, newest first, filterable.
         * @description Every `email.*` event of the workspace: those of sent mail (see
         *     `GET /emails/{email_id}/events` for the types and their `data`),
         *     `email.opened` and `email.clicked` from tracking, and `email.received`
         *     from inbound mail (its `email_id` is the inbound message's id).
         *
         *     Filters combine with AND and are repeated on every page of a walk:
         *     - `event_type`: one kind, the type `email.<event_type>`: the spec's
         *       sent, delivered, bounced, opened, clicked, complained, failed and
         *       delayed, and also scheduled, queued, cancelled, replied and
         *       received (every kind this list can return); anything else is 400.
         *     - `email_id`, `domain_id`: exact.
         *     - `to`: case-insensitive substring of the recipient the event is
         *       about, or, for an event about the whole email (`email.sent`,
         *       `email.queued`, ...), of any of the email's recipients.
         *     - `from`: case-insensitive substring of the from field as given
         *       (display name included).
         *     - `tags`: events of emails carrying any of the tags (repeat the
         *       parameter or separate with commas); tags match exactly.
         *     - `created_after`, `created_before`: exclusive bounds, ISO 8601.
         */
        get: operations["listEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/events/{event_id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                event_id: string;
            };
            cookie?: never;
        };
        /** One event. */
        get: operations["getEvent"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/inbound": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Mail received at the workspace's domains, newest first.
         * @description Mail is received on the MX port (MAILROOM_SMTP_PORT) for domains that
         *     are `active` and have `inbound_enabled`; point the domain's MX record
         *     at this server. Every local part is taken (a catch-all). `postmaster`
         *     without a domain (RFC 5321 §4.5.1), or at MAILROOM_HOSTNAME itself, is
         *     taken for the domain named MAILROOM_HOSTNAME, or the nearest parent of
         *     it that receives mail here, and is listed there with its `rcpt_to`
         *     as written (`["postmaster"]`); with no
         *     such domain it is still taken, into the server's own Maildir
         *     (`<data dir>/postmaster`), which no API key reads. The
         *     message is stored before the server answers `250` and is listed from
         *     then on with `status: received`; it is then parsed and checked (SPF,
         *     DKIM, DMARC) in the background, usually within a second, becomes
         *     `processed`, and an `email.received` event is written. A message that
         *     cannot be parsed becomes `failed`, with `failure_reason`; it stays
         *     listed and its source can be downloaded. A message for two of the
         *     workspace's domains is listed once per domain.
         *
         *     Messages past the structural limits are refused at DATA and never
         *     stored: more than 500 MIME parts (the message and every part of
         *     every level), multiparts and embedded messages nested more than 100
         *     deep, more than 10,000 header lines in all, or one header section
         *     over 256 KiB. These are answered `554 5.6.0` (`552 5.3.4` for the
         *     header size), on the MX and the submission ports alike.
         *
         *     Bounces and feedback reports sent to a return path are not listed:
         *     they become `email.bounced` and `email.complained` events of the email
         *     they are about.
         *
         *     Filters: `to` matches envelope recipients and To/Cc addresses, `from`
         *     the envelope sender and the From address (both partial,
         *     case-insensitive); `received_after` and `received_before` are
         *     exclusive. Messages are kept MAILROOM_INBOUND_RETENTION_DAYS days
         *     (default 30).
         */
        get: operations["listInboundEmails"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/inbound/{inbound_id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                inbound_id: string;
            };
            cookie?: never;
        };
        /**
         * One received message, parsed, with its authentication results.
         * @description `text` and `html` are the message's own parts (null when it has none;
         *     neither is derived from the other). `headers` lists every header field
         *     in message order, the value unfolded but otherwise as received
         *     (RFC 2047 encoded words are not decoded; the address and subject
         *     fields are). The first two fields are the trace fields this server
         *     added (Return-Path, Received). `auth` holds the SPF result for the
         *     envelope sender (or the HELO name for the null sender), each DKIM
         *     signature's result, and the DMARC result, as in the
         *     `authentication_results` field (RFC 8601).
         */
        get: operations["getInboundEmail"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/inbound/{inbound_id}/raw": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                inbound_id: string;
            };
            cookie?: never;
        };
        /**
         * The message as stored, an .eml file.
         * @description Served from the `250` on, whatever the message's `status`. The message as received, with this server's Return-Path and Received
         *     fields in front and every line ending CRLF (a bare CR or LF in what
         *     the client sent is stored as CRLF).
         */
        get: operations["getInboundEmailRaw"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/inbound/{inbound_id}/attachments/{index}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                inbound_id: string;
                /** @description The attachment's `index` in the message's `attachments`. */
                index: number;
            };
            cookie?: never;
        };
        /**
         * Download one attachment of a received message.
         * @description Only a `processed` message has attachments to download (404
         *     otherwise). The decoded file, with the media type the message gave it and its
         *     file name in Content-Disposition (`attachment-<index>` when it had
         *     none). It is always served as a download (`attachment`, with
         *     `X-Content-Type-Options: nosniff`), never rendered.
         */
        get: operations["getInboundAttachment"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/queue": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The workspace's outbound queue by destination domain, what waits longest first.
         * @description One entry per recipient domain the workspace has mail waiting for:
         *     recipients `queued` (no attempt yet), `deferred` (waiting for a
         *     retry after a temporary failure) and `leased` (held by a delivery:
         *     an attempt under way, or a node that stopped during one, whose
         *     lease runs out at `lease_ends_at`; /metrics counts these rows as
         *     leased too), the emails they belong to, the
         *     oldest one's creation, the next attempt, whether the domain is held,
         *     and the reply to the latest failed attempt (`code` null when no
         *     server answered: a connection refused or timed out, a DNS failure).
         *     The ranking is of the moment the page is read; a cursor names a
         *     place in it, so a walk through a queue that moves may see a domain
         *     twice or not at all. Scope `queue:read`.
         */
        get: operations["listQueue"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/queue/items": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The emails waiting for one domain, newest first, with their recipients there.
         * @description `state`: `queued` (no attempt yet), `deferred` (tried, waiting for a
         *     retry), `sending` (an attempt under way) or `held` (the domain is
         *     held: every waiting email is). Scope `queue:read`.
         */
        get: operations["listQueueItems"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/queue/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Try now what waits for a domain, for one email, or all of the workspace's queue.
         * @description The matching rows that no attempt holds become due at once, without
         *     counting an attempt, and a destination resting after failed
         *     connections gets one probe at once (its full share comes back when a
         *     server answers). Mail of a held domain stays held. `retried` counts
         *     the emails (one per destination domain) made due. Rows under a lease
         *     are left alone, since their attempt may be under way on a live node:
         *     `leased` counts them and `lease_ends_at` says when the last lease
         *     runs out (then, if their node stopped, another takes them). An `email_id` of
         *     another workspace, or none, is 404. Scope `queue:write`.
         */
        post: operations["retryQueue"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/queue/hold": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Hold the workspace's mail to a domain.
         * @description Nothing is tried for that domain, by this workspace, until it is
         *     released: mail already waiting and mail sent meanwhile wait, and the
         *     time they spend held does not count against their delivery lifetime
         *     (5 days). Attempts under way finish. Other workspaces' mail to the
         *     domain is not affected. Holding a held domain keeps the first hold's
         *     time. Scope `queue:write`.
         */
        post: operations["holdQueue"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/queue/release": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Release a held domain.
         * @description Its mail is tried again, each email when its next attempt falls due
         *     (at once for those that fell due while held), with its lifetime
         *     moved on by the time it was held. A domain not held is 422
         *     `invalid_state`. Scope `queue:write`.
         */
        post: operations["releaseQueue"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/suppressions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List suppressed addresses, newest first.
         * @description Suppressions are workspace-wide: every send of the workspace, from any
         *     domain, skips a suppressed address with a `failed` event naming the
         *     reason. They are added automatically by unsubscribes (API or the
         *     one-click link: `unsubscribe`), hard bounces (`hard_bounce`) and
         *     complaints (`complaint`), and by hand (`manual`). There is one per
         *     address; the first reason recorded is kept. `email` matches the
         *     normalised (trimmed, lower-cased) address exactly.
         */
        get: operations["listSuppressions"];
        put?: never;
        /**
         * Suppress an address by hand (reason `manual`).
         * @description An address that is already suppressed, for any reason, is 422
         *     `already_exists` with the existing suppression's id in
         *     `suppression_id`. A manual suppression does not change the status of
         *     the address's contact; it blocks sends.
         */
        post: operations["createSuppression"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/suppressions/{suppression}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The suppression's id (`sup_…`) or the address, URL-encoded. */
                suppression: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Lift a suppression, by id or by address.
         * @description Sends to the address are allowed again. The status of its contact is
         *     not changed: an unsubscribed or cleaned contact stays so, and broadcasts
         *     still skip it.
         */
        delete: operations["deleteSuppression"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tags": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the workspace's tags, newest first. */
        get: operations["listTags"];
        put?: never;
        /**
         * Create a tag.
         * @description The name is trimmed and kept in Unicode NFC. Names are unique per
         *     workspace without regard to case or to how a character is composed:
         *     "VIP" when "vip" exists, or "Café" written with e and a combining
         *     accent (NFD) when it exists with é (NFC), is 422 `already_exists`,
         *     naming the existing tag's id in `tag_id`. Tag names given on contacts
         *     are matched the same way.
         */
        post: operations["createTag"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tags/{tag_id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                tag_id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Delete a tag; every contact assignment of it is removed too.
         * @description While the audience of a scheduled, sending or paused broadcast names
         *     the tag (in `tag_ids` or `exclude_tag_ids`), it is refused with 422
         *     `tag_in_use` and the error's `broadcast_id`: without the tag that
         *     broadcast would go to other contacts than the ones chosen. Cancel it,
         *     or let it finish, first. A draft may lose a tag: sending it is then
         *     refused until its audience is changed. Scope `contacts:write`.
         */
        delete: operations["deleteTag"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/templates": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the workspace's templates, newest first.
         * @description `name` matches a part of the name, ignoring case. The list items
         *     leave out the versions' content: GET /templates/{template_id} has it.
         *     Scope `templates:read`.
         */
        get: operations["listTemplates"];
        put?: never;
        /**
         * Create a template; its content becomes version 1, a draft.
         * @description Sources are [Liquid](https://shopify.github.io/liquid/) (LiquidJS):
         *     `{{ first_name | default: "there" }}`, `{% if %}`, `{% for %}`,
         *     `{% assign %}`, and filters such as `upcase`, `date` (in UTC),
         *     `plus`, `times`, `url_encode`. In `html`, every `{{ … }}`
         *     is HTML-escaped unless its last filter is `raw` (for HTML you
         *     trust); `subject` and `text` are not escaped. Templates cannot load
         *     other templates or files: `include`, `render` and `layout` do not
         *     exist.
         *
         *     Checked when saved, all at once (422 `template_invalid`, with every
         *     problem in `problems`, each with `param` and, for a source, `line`
         *     and `column`; the message names the first with its line and column):
         *     each source must parse; every variable a source reads must be
         *     declared in `variables`, except `contact` and `unsubscribe_url`,
         *     which Mailroom fills for each recipient; a version needs `html`,
         *     `text` or both; `from` and `reply_to` must be valid addresses.
         *
         *     Declarations: `key` (a letter or `_`, then letters, digits or `_`;
         *     not `contact`, `unsubscribe_url` or a Liquid word such as `empty`),
         *     `type` (`string`, `number`, `boolean`, `object` or `list`),
         *     `required` (default false) and `fallback` (used when a send leaves
         *     the variable out; of the declared type). An optional variable left
         *     out with no fallback renders as nothing.
         *
         *     `alias` names the template wherever its id is accepted (paths, and
         *     `template.id` in sends); it is unique in the workspace (422
         *     `already_exists`, naming the holder in `template_id`), cannot
         *     start with `tpl_` and cannot be `render` (the path of the preview).
         *     Scope `templates:write`.
         */
        post: operations["createTemplate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/templates/render": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Render unsaved sources with sample values (an editor's live preview).
         * @description `subject`, `html`, `text` and `variables` (the declarations) are
         *     checked as when saving (422 `template_invalid`); `data`, the values,
         *     as in a send (422 `template_variables_invalid`: a required variable
         *     missing, a value of the wrong type, a value whose lists and objects
         *     nest more than 32 deep, listed in `problems`). `data` may
         *     also hold sample values of `contact` (an object; given a `name`,
         *     its `first_name` and `last_name` are that name's first and last
         *     words, as for a real contact, unless the sample gives them) and
         *     `unsubscribe_url` (a string); without them `contact` is empty and
         *     `unsubscribe_url` is "". The text part is derived from the HTML when
         *     there is no `text`. A render over the limits (100 ms, 5,000,000
         *     characters a part, 10,000,000 characters or elements allocated by
         *     filters, ranges and captures, 1,000,000 by one range, filter or
         *     capture, an array of
         *     10,000 elements given to a filter other than `size`, `first` and
         *     `last`) is 422 `template_render_failed`. Nothing is
         *     stored. Scope `templates:read`.
         */
        post: operations["previewTemplate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/templates/{template_id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The template's id (tpl_…) or its alias. */
                template_id: components["parameters"]["TemplateRef"];
            };
            cookie?: never;
        };
        /**
         * One template, with the content of its latest and its published version.
         * @description Scope `templates:read`.
         */
        get: operations["getTemplate"];
        put?: never;
        post?: never;
        /**
         * Delete a template and its versions.
         * @description Emails already made from it keep their rendered content, and their
         *     `template_id` and `template_version`. While a scheduled, sending or
         *     paused broadcast names it (by id or alias), it is refused with 422
         *     `template_in_use` and the error's `broadcast_id`: cancel that
         *     broadcast, or let it finish, first. A draft may lose its template.
         *     Scope `templates:write`.
         */
        delete: operations["deleteTemplate"];
        options?: never;
        head?: never;
        /**
         * Rename a template, change its alias, or save new content as a new draft version.
         * @description `name` and `alias` (null removes it) change the template itself.
         *     While a scheduled broadcast names the template by its alias, the
         *     alias cannot change (422 `template_in_use`, naming `alias`, with the
         *     error's `broadcast_id`): that broadcast would find another template,
         *     or none, when it starts. Name the template by its id there first.
         *     Content fields (`subject`, `html`, `text`, `from`, `reply_to`,
         *     `variables`; null clears an optional one) make a new version: the
         *     latest version with the given fields replaced, checked as on create
         *     (422 `template_invalid`), numbered one past the latest. It is a
         *     draft: the published version, and every send by it, stay as they
         *     were until it is published. Content identical to the latest
         *     version's makes no new version. Versions never change once written.
         *     Scope `templates:write`.
         */
        patch: operations["updateTemplate"];
        trace?: never;
    };
    "/templates/{template_id}/publish": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The template's id (tpl_…) or its alias. */
                template_id: components["parameters"]["TemplateRef"];
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Make a version the one sends use.
         * @description Publishes the latest version, or `version` (an older one too: a
         *     rollback). Sends that name no version use the published one from
         *     then on; emails already made keep their content. A version that
         *     does not exist is 422. Scope `templates:write`.
         */
        post: operations["publishTemplate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/templates/{template_id}/duplicate": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The template's id (tpl_…) or its alias. */
                template_id: components["parameters"]["TemplateRef"];
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Copy a template's latest version into a new template, as its version 1 (a draft).
         * @description The copy is named `name`, or "<name> (copy)"; it has `alias` when
         *     given (unique, as on create), else none. Scope `templates:write`.
         */
        post: operations["duplicateTemplate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/templates/{template_id}/versions": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The template's id (tpl_…) or its alias. */
                template_id: components["parameters"]["TemplateRef"];
            };
            cookie?: never;
        };
        /**
         * A template's versions, newest first, without their html and text.
         * @description Scope `templates:read`.
         */
        get: operations["listTemplateVersions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/templates/{template_id}/versions/{version}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The template's id (tpl_…) or its alias. */
                template_id: components["parameters"]["TemplateRef"];
                version: number;
            };
            cookie?: never;
        };
        /**
         * One version of a template, with its content.
         * @description Scope `templates:read`.
         */
        get: operations["getTemplateVersion"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/templates/{template_id}/render": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The template's id (tpl_…) or its alias. */
                template_id: components["parameters"]["TemplateRef"];
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Render a version with values, without sending anything.
         * @description Renders the published version, or `version`, exactly as a send by
         *     it would (422 `template_not_published` when none is published and
         *     no version is named). `variables` are checked against the version's
         *     declarations: every problem (a required variable missing, a value of
         *     the wrong type, a value whose lists and objects nest more than 32
         *     deep) is listed in one 422 `template_variables_invalid`; a
         *     render over the limits is 422 `template_render_failed`. As in a
         *     preview, `variables` may hold sample values of `contact` and
         *     `unsubscribe_url`. `text` is the version's text, or the text derived
         *     from the rendered HTML when it has none. Scope `templates:read`.
         */
        post: operations["renderTemplate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the workspace's webhook endpoints, newest first. Secrets are not shown. */
        get: operations["listWebhooks"];
        put?: never;
        /**
         * Add an endpoint. The signing secret is in this response and in a rotation's only.
         * @description Every event of a subscribed type that happens after the endpoint is
         *     made is POSTed to `url` as JSON
         *     `{"type", "created_at", "data": <the event as GET /events/{id} shows it>}`,
         *     signed as Standard Webhooks (https://www.standardwebhooks.com):
         *     headers `webhook-id` (the event id; the same on every retry and
         *     replay, for de-duplication), `webhook-timestamp` (Unix seconds of the
         *     attempt) and `webhook-signature`: `v1,<base64 HMAC-SHA256 of
         *     "<webhook-id>.<webhook-timestamp>.<body>">` keyed with the base64
         *     part of the `whsec_` secret after the prefix. During the 24 hours
         *     after a rotation a second, space-separated `v1,` signature with the
         *     old secret is added.
         *
         *     Delivery is at least once. An answer 2xx within 15 seconds is
         *     success; redirects are not followed. Otherwise the attempt is
         *     retried: at once, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
         *     14 h, 20 h and 24 h (each wait ±10 %), 10 attempts over about 3 days,
         *     after which the delivery is `failed`. At most 4 attempts per endpoint
         *     are in flight at once; order is not guaranteed. A 410 answer disables
         *     the endpoint; so does failing every attempt for 5 days. Disabling
         *     (either way, or through PATCH) fails the endpoint's pending
         *     deliveries, which can be replayed once it is enabled again.
         *
         *     The URL must be http or https without credentials. Unless the server
         *     runs with MAILROOM_WEBHOOK_ALLOW_PRIVATE, URLs naming a private,
         *     loopback, link-local, CGNAT, unique-local, multicast or unspecified
         *     address are 422, in any spelling (decimal, octal or hex IPv4;
         *     IPv4-mapped, NAT64 or 6to4 IPv6), as is `localhost`; a host name is
         *     resolved at every attempt and refused when any address is such, and
         *     the connection goes to the address checked.
         *
         *     `event_types` may list `email.*` types (sending, tracking, and
         *     `email.received` for inbound mail), `broadcast.*` types and
         *     `contact.unsubscribed`. The body POSTed is `{type, created_at,
         *     data}` with the event in `data`; the events of broadcasts and
         *     contacts have `email_id` null and these fields in `data.data`:
         *     `broadcast.sending` (sending started, or `resumed`: `broadcast_id`,
         *     `name`, `audience_size`, `resumed`), `broadcast.paused`
         *     (`broadcast_id`, `name`, `reason`, `resume_at`: when the quota lets
         *     it go on by itself, else null), `broadcast.sent` (`broadcast_id`,
         *     `name`, `emails_created`), `broadcast.cancelled` (`broadcast_id`,
         *     `name`, `previous_status`, `emails_created`) and
         *     `contact.unsubscribed` (`contact_id`, `email`, `reason`, `source`:
         *     `api` or `link`, the one-click link in the mail). They are not in
         *     GET /events, the timeline of emails.
         */
        post: operations["createWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{webhook_id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                webhook_id: string;
            };
            cookie?: never;
        };
        /** One endpoint (without its secret). */
        get: operations["getWebhook"];
        put?: never;
        post?: never;
        /** Delete the endpoint with its deliveries; nothing more is sent to it. */
        delete: operations["deleteWebhook"];
        options?: never;
        head?: never;
        /**
         * Change the URL, subscriptions or description, or enable or disable the endpoint.
         * @description The URL is checked as on create. `enabled: false` disables the
         *     endpoint and fails its pending deliveries; `enabled: true` clears
         *     `disabled_reason` and the run of failures.
         */
        patch: operations["updateWebhook"];
        trace?: never;
    };
    "/webhooks/{webhook_id}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                webhook_id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Replace the signing secret; the old one also signs for 24 hours more. */
        post: operations["rotateWebhookSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{webhook_id}/test": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                webhook_id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a `webhook.test` event to the endpoint now and answer with the delivery and its attempt.
         * @description The body is `{"type": "webhook.test", "created_at", "data": {"webhook_id", "message"}}`,
         *     signed like every delivery; `webhook-id` is a fresh `msg_` id. The
         *     request waits for the answer (up to 15 seconds). A test is attempted
         *     once, works on a disabled endpoint too, and does not count toward
         *     the endpoint's health (a 410 or failures do not disable it).
         */
        post: operations["testWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{webhook_id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                webhook_id: string;
            };
            cookie?: never;
        };
        /**
         * The deliveries to the endpoint, newest first, each with every attempt.
         * @description Finished deliveries are kept 30 days.
         */
        get: operations["listWebhookDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{webhook_id}/deliveries/{delivery_id}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                webhook_id: string;
                delivery_id: string;
            };
            cookie?: never;
        };
        /** One delivery with every attempt. */
        get: operations["getWebhookDelivery"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{webhook_id}/deliveries/{delivery_id}/replay": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                webhook_id: string;
                delivery_id: string;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a past delivery again, as a new delivery with the same webhook-id and body.
         * @description Any delivery can be replayed, whatever its status. The new delivery
         *     (`replay_of` names the original) starts a fresh retry schedule, is
         *     attempted at once by the dispatcher and is signed with the current
         *     secret and time. A disabled endpoint is 422 `invalid_state`.
         */
        post: operations["replayWebhookDelivery"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        Error: {
            error: {
                /** @description Stable machine code, snake_case. */
                code: string;
                message: string;
                /** @description The request field or header the error is about. */
                param?: string;
                problems?: components["schemas"]["Problems"];
                request_id: string;
            };
        };
        /** @description Every problem found, in errors that report several at once (a template's sources, declarations and variables): the field each is about, and for a template source the line and column (1-based). */
        Problems: {
            param: string;
            message: string;
            line?: number;
            column?: number;
            /** @description For a variable the sources use but `variables` does not declare, its name. */
            variable?: string;
        }[];
        /** Format: date-time */
        Timestamp: string;
        /** Format: date-time */
        NullableTimestamp: string | null;
        AnalyticsCounts: {
            sent: number;
            delivered: number;
            bounced: number;
            opened: number;
            clicked: number;
            complained: number;
            failed: number;
            delayed: number;
            unique_opened: number;
            unique_clicked: number;
        };
        AnalyticsTotals: components["schemas"]["AnalyticsCounts"];
        AnalyticsBucket: {
            start: components["schemas"]["Timestamp"];
            end: components["schemas"]["Timestamp"];
        } & components["schemas"]["AnalyticsCounts"];
        Analytics: {
            /** @constant */
            object: "analytics";
            from: components["schemas"]["Timestamp"];
            to: components["schemas"]["Timestamp"];
            /** @enum {string} */
            granularity: "hour" | "day";
            /** @enum {string} */
            mode: "live" | "test";
            domain_id: string | null;
            tags: string[];
            totals: components["schemas"]["AnalyticsTotals"];
            series: components["schemas"]["AnalyticsBucket"][];
        };
        ApiKeyCreate: {
            name: string;
            scopes?: ("full_access" | "sending_access" | "emails:send" | "emails:read" | "domains:read" | "domains:write" | "events:read" | "contacts:read" | "contacts:write" | "suppressions:read" | "suppressions:write" | "webhooks:read" | "webhooks:write" | "inbound:read" | "analytics:read" | "templates:read" | "templates:write" | "broadcasts:read" | "broadcasts:write" | "queue:read" | "queue:write" | "api_keys:read" | "api_keys:write")[];
            /** @enum {string} */
            mode?: "live" | "test";
        };
        ApiKey: {
            id: string;
            /** @constant */
            object: "api_key";
            name: string;
            /** @enum {string} */
            mode: "live" | "test";
            /** @description Masked: svc_<mode>_<first 4 of the lookup part>…<last 4>. */
            token: string;
            scopes: string[];
            created_at: components["schemas"]["Timestamp"];
            last_used_at: components["schemas"]["NullableTimestamp"];
            revoked_at: components["schemas"]["NullableTimestamp"];
        };
        CurrentApiKey: {
            id: string;
            /** @constant */
            object: "current_api_key";
            name: string;
            /** @enum {string} */
            mode: "live" | "test";
            workspace_id: string;
            /** @description The scopes as granted when the key was made. */
            scopes: string[];
            /** @description The fine scopes that `scopes` amount to, which each operation checks. */
            effective_scopes: ("emails:send" | "emails:read" | "domains:read" | "domains:write" | "events:read" | "contacts:read" | "contacts:write" | "suppressions:read" | "suppressions:write" | "webhooks:read" | "webhooks:write" | "inbound:read" | "analytics:read" | "templates:read" | "templates:write" | "broadcasts:read" | "broadcasts:write" | "queue:read" | "queue:write" | "api_keys:read" | "api_keys:write")[];
            created_at: components["schemas"]["Timestamp"];
        };
        ApiKeyCreated: {
            /** @description The raw token, shown this once. */
            token?: string;
        } & components["schemas"]["ApiKey"];
        ApiKeyList: {
            data: components["schemas"]["ApiKey"][];
            has_more: boolean;
            next_cursor?: string;
        };
        ApiKeyActivity: {
            id: string;
            operation_id: string;
            method: string;
            path: string;
            status: number;
            resource_id: string | null;
            request_id: string;
            ip: string | null;
            created_at: components["schemas"]["Timestamp"];
        };
        ApiKeyActivityList: {
            data: components["schemas"]["ApiKeyActivity"][];
            has_more: boolean;
            next_cursor?: string;
        };
        AttachmentCreate: {
            /** @description The file in base64 (line breaks and spaces between the characters are ignored). */
            content: string;
            filename: string;
            content_type?: string;
        };
        Attachment: {
            id: string;
            /** @constant */
            object: "attachment";
            /** @description The same as id; what sends reference. */
            attachment_id: string;
            filename: string;
            content_type: string;
            /** @description Bytes, decoded. */
            size: number;
            created_at: components["schemas"]["Timestamp"];
            expires_at: components["schemas"]["Timestamp"];
        };
        /** @enum {string} */
        BroadcastStatus: "draft" | "scheduled" | "sending" | "paused" | "sent" | "cancelled";
        /**
         * @description Subscribed contacts that are not deleted and not suppressed, with
         *     any of `tag_ids` (none: all of them), none of `exclude_tag_ids`,
         *     and, when `engagement_tiers` is given, in one of those tiers (leave
         *     out `inactive` and `cold` for a sunset policy).
         */
        BroadcastAudienceInput: {
            tag_ids?: string[];
            exclude_tag_ids?: string[];
            engagement_tiers?: components["schemas"]["EngagementTier"][];
        };
        BroadcastAudienceFilter: {
            tag_ids: string[];
            exclude_tag_ids: string[];
            /** @description null for every tier. */
            engagement_tiers: components["schemas"]["EngagementTier"][] | null;
        };
        BroadcastTemplateInput: {
            /** @description A template's id or alias. */
            id: string;
            /** @description Without it, the version published when sending starts. */
            version?: number;
        };
        BroadcastCreate: {
            name: string;
            from?: string;
            reply_to?: components["schemas"]["EmailAddressField"];
            /**
             * Format: header-value
             * @description One line: a TAB is kept (white space in a header, RFC 5322), a line break or another control character is a validation_error.
             */
            subject?: string;
            /** @description One line, without control characters. */
            preview_text?: string;
            /**
             * Format: message-body
             * @description Taken as written, TAB, CR, LF and form feeds included; only a NUL character is refused.
             */
            html?: string;
            /**
             * Format: message-body
             * @description Taken as written, TAB, CR, LF and form feeds included; only a NUL character is refused.
             */
            text?: string;
            template?: components["schemas"]["BroadcastTemplateInput"];
            audience?: components["schemas"]["BroadcastAudienceInput"];
            /** @description At most this many emails made a minute; none: as fast as they can be made. */
            send_rate_per_minute?: number;
        };
        BroadcastUpdate: {
            name?: string;
            from?: string | null;
            reply_to?: components["schemas"]["EmailAddressField"] | null;
            /** @description One line: a TAB is kept (white space in a header, RFC 5322), a line break or another control character is a validation_error. */
            subject?: string | null;
            /** @description One line, without control characters. */
            preview_text?: string | null;
            /** @description Taken as written, TAB, CR, LF and form feeds included; only a NUL character is refused. */
            html?: string | null;
            /** @description Taken as written, TAB, CR, LF and form feeds included; only a NUL character is refused. */
            text?: string | null;
            template?: components["schemas"]["BroadcastTemplateInput"] | null;
            audience?: components["schemas"]["BroadcastAudienceInput"];
            send_rate_per_minute?: number | null;
        };
        BroadcastAudienceRequest: {
            audience?: components["schemas"]["BroadcastAudienceInput"];
        };
        BroadcastAudienceContact: {
            id: string;
            email: string;
            name: string | null;
            engagement_tier: components["schemas"]["EngagementTier"];
        };
        BroadcastAudience: {
            /** @enum {string} */
            object: "broadcast_audience";
            count: number;
            data: components["schemas"]["BroadcastAudienceContact"][];
        };
        BroadcastPreviewRequest: {
            contact_id: string;
        };
        BroadcastRender: {
            /** @enum {string} */
            object: "broadcast_render";
            contact_id: string;
            to: string;
            subject: string;
            html: string | null;
            text: string;
            /**
             * @description The contact fields the content writes out that this contact does
             *     not have, has as null, or has blank (only white space), each
             *     named as the content names it (`contact.first_name`,
             *     `contact.properties.company`), once, in the order the subject,
             *     the HTML and then the text first write them: each rendered as
             *     nothing in this message. A field written with a `default` filter
             *     (`{{ contact.first_name | default: "there" }}`) has its fallback
             *     and is not listed, nor is one written inside an `if`, `unless` or
             *     `case` that tests it. Empty when nothing renders empty.
             */
            empty_fields: string[];
        };
        BroadcastTestRequest: {
            to: string[];
        };
        BroadcastTestResult: {
            data: {
                to: string;
                email_id: string;
            }[];
        };
        BroadcastSendRequest: {
            scheduled_at?: string;
        };
        /**
         * @description `audience_size`: contacts in the audience when sending started (the
         *     current count before). `emails_created`: emails made so far. Then,
         *     among those emails: `sent` handed to delivery, `delivered`,
         *     `bounced`, `complained`, `opened`, `clicked` and `failed` counted
         *     once per email; `suppressed`: recipients on the suppression list by
         *     the time their email was made; `unsubscribed`: contacts who
         *     unsubscribed, by any means, at or after the time their email was
         *     made. `skipped`: contacts of the audience that got no email, listed
         *     with the reason by `GET /broadcasts/{id}/skipped`. A contact that
         *     leaves the audience after sending started and before its chunk
         *     (unsubscribed, deleted, or no longer matching the tags or tiers)
         *     gets no email and is not a skip either: it is the difference
         *     between `audience_size` and `emails_created` plus `skipped` once
         *     the broadcast is sent. Kept as counters
         *     that change with the emails: a read costs the same whatever the
         *     broadcast's size.
         */
        BroadcastStats: {
            audience_size: number;
            emails_created: number;
            sent: number;
            delivered: number;
            bounced: number;
            complained: number;
            opened: number;
            clicked: number;
            unsubscribed: number;
            failed: number;
            suppressed: number;
            skipped: number;
        };
        BroadcastSkip: {
            /** @enum {string} */
            object: "broadcast_skip";
            contact_id: string;
            /** @description The contact's address when its email was to be made. */
            email: string;
            /** @enum {string} */
            code: "render_failed" | "invalid_address" | "invalid_subject" | "message_too_large";
            /** @description What failed, as the error of the email would have said. */
            message: string;
            created_at: components["schemas"]["Timestamp"];
        };
        BroadcastSkipList: {
            data: components["schemas"]["BroadcastSkip"][];
            has_more: boolean;
            next_cursor?: string;
        };
        Broadcast: {
            id: string;
            /** @enum {string} */
            object: "broadcast";
            name: string;
            from: string | null;
            reply_to: string[];
            subject: string | null;
            preview_text: string | null;
            html: string | null;
            text: string | null;
            template: null | {
                /** @description The id or alias given; from the start of sending, the id. */
                id: string;
                /** @description null for the version published when sending starts; from the start of sending, that version. */
                version: number | null;
            };
            audience: components["schemas"]["BroadcastAudienceFilter"];
            send_rate_per_minute: number | null;
            status: components["schemas"]["BroadcastStatus"];
            /** @description Why a broadcast is paused. */
            status_reason: string | null;
            /**
             * @description The mode of the key that sent it; null before.
             * @enum {string|null}
             */
            mode: "live" | "test" | null;
            scheduled_at: components["schemas"]["NullableTimestamp"];
            created_at: components["schemas"]["Timestamp"];
            updated_at: components["schemas"]["Timestamp"];
            started_at: components["schemas"]["NullableTimestamp"];
            sent_at: components["schemas"]["NullableTimestamp"];
            cancelled_at: components["schemas"]["NullableTimestamp"];
            stats: components["schemas"]["BroadcastStats"];
        };
        BroadcastList: {
            data: components["schemas"]["Broadcast"][];
            has_more: boolean;
            next_cursor?: string;
        };
        /**
         * @description `cleaned`: the address hard-bounced or complained; set automatically.
         * @enum {string}
         */
        ContactStatus: "subscribed" | "unsubscribed" | "cleaned";
        /**
         * @description From the address's email events, with age measured from the last open
         *     or click, or from the first send if there was none: `no_data` nothing
         *     sent; `engaged` opened or clicked in the last 30 days; `new` first sent
         *     to in the last 30 days and never opened or clicked; `at_risk` age 30 to
         *     90 days; `inactive` 90 to 180 days; `cold` over 180 days. Sends are
         *     email.sent and email.delivered events; opens and clicks of an email
         *     count for each of its recipients (one tracking pixel cannot tell them
         *     apart). Refreshed as events arrive (within a minute) and as time passes
         *     (hourly).
         * @enum {string}
         */
        EngagementTier: "no_data" | "new" | "engaged" | "at_risk" | "inactive" | "cold";
        /** @description Tag names, matched without regard to case and in Unicode NFC (a composed and a decomposed "Café" are one tag); missing tags are created. A name's length limits apply to it as it is kept: without leading and trailing white space, and in NFC, where a character written decomposed counts as the one character it composes to. */
        ContactTagNames: string[];
        /** @description Properties to set, merged into the contact's; null removes one. A text value may hold TAB, CR and LF; another control character is a validation_error. */
        ContactPropertiesInput: {
            [key: string]: string | number | boolean | null;
        };
        ContactCreate: {
            email: string;
            name?: string | null;
            tags?: components["schemas"]["ContactTagNames"];
            properties?: components["schemas"]["ContactPropertiesInput"];
        };
        ContactUpsert: {
            name?: string | null;
            tags?: components["schemas"]["ContactTagNames"];
            properties?: components["schemas"]["ContactPropertiesInput"];
        };
        ContactUpdate: {
            name?: string | null;
            tags?: components["schemas"]["ContactTagNames"];
            properties?: components["schemas"]["ContactPropertiesInput"];
        };
        ContactUnsubscribe: {
            /**
             * Format: multi-line
             * @description TAB, CR and LF are kept; another control character is a validation_error.
             */
            reason?: string;
        };
        ContactBulkRequest: {
            /** @description ContactCreate objects; an item that is not one is reported in `errors`, not rejected with the request. */
            contacts: unknown[];
        };
        ContactBulkResult: {
            created: number;
            updated: number;
            failed: number;
            errors: {
                /** @description Position of the item in `contacts`. */
                index: number;
                /** @description The address as given, or null when there was none. */
                email: string | null;
                /** @enum {string} */
                code: "validation_error" | "duplicate_in_request";
                message: string;
            }[];
        };
        Contact: {
            id: string;
            /** @constant */
            object: "contact";
            /** @description Normalised: trimmed, lower-cased and in Unicode NFC. */
            email: string;
            name: string | null;
            status: components["schemas"]["ContactStatus"];
            engagement_tier: components["schemas"]["EngagementTier"];
            /** @description The contact's tags, by name. */
            tags: {
                id: string;
                name: string;
            }[];
            /** @description The contact's properties; {} when it has none. */
            properties: {
                [key: string]: string | number | boolean;
            };
            unsubscribed_at: components["schemas"]["NullableTimestamp"];
            unsubscribe_reason: string | null;
            created_at: components["schemas"]["Timestamp"];
            updated_at: components["schemas"]["Timestamp"];
        };
        ContactList: {
            data: components["schemas"]["Contact"][];
            has_more: boolean;
            next_cursor?: string;
        };
        /** @description Label(s) under the domain, such as `bounces` or `mail.track`: letters, digits and hyphens. */
        Subdomain: string;
        DomainCreate: {
            /** @description The domain, such as example.com or an IDN such as bücher.example. */
            name: string;
            /** @description A label for where the domain's mail is sent from. */
            region?: string;
            /** @description Subdomain used as the envelope sender (MAIL FROM), where bounces go. */
            return_path?: components["schemas"]["Subdomain"];
            /** @description Subdomain serving open and click tracking links. */
            tracking_subdomain?: components["schemas"]["Subdomain"];
            open_tracking?: boolean;
            click_tracking?: boolean;
            /** @description Whether Mailroom receives the domain's mail (adds an MX record for the domain). */
            inbound_enabled?: boolean;
        };
        DomainUpdate: {
            open_tracking?: boolean;
            click_tracking?: boolean;
            tracking_subdomain?: components["schemas"]["Subdomain"];
            inbound_enabled?: boolean;
        };
        DomainRecord: {
            /**
             * @description What the record is for.
             * @enum {string}
             */
            record: "DKIM" | "DKIM_ED25519" | "SPF" | "MX_BOUNCE" | "MX_INBOUND" | "DMARC" | "TRACKING";
            /** @enum {string} */
            type: "TXT" | "MX" | "CNAME";
            /** @description The full name to publish the record at (no trailing dot). */
            name: string;
            value: string;
            /** @description MX preference; MX records only. */
            priority?: number;
            /** @constant */
            ttl: "Auto";
            /** @description Whether the domain needs it to be active. */
            required: boolean;
            /** @enum {string} */
            status: "pending" | "verified" | "failed";
            /** @description Why the record is failed, or that the last look-up met a temporary DNS error. */
            detail?: string;
            /**
             * @description DKIM records: the key is waiting for its record (pending), signs mail (active), or was replaced by a rotation (retiring).
             * @enum {string}
             */
            key_state?: "pending" | "active" | "retiring";
            /**
             * Format: date-time
             * @description Retiring DKIM records: when the record may be deleted from DNS.
             */
            removable_after?: string;
        };
        Domain: {
            id: string;
            /** @constant */
            object: "domain";
            /** @description The normalised name (punycode for IDNs). */
            name: string;
            /** @enum {string} */
            status: "unverified" | "verifying" | "active";
            /** @description While not active after a check: which required records do not match, or why checks stopped. */
            status_reason: string | null;
            region: string;
            return_path: string;
            open_tracking: boolean;
            click_tracking: boolean;
            tracking_subdomain: string;
            inbound_enabled: boolean;
            records: components["schemas"]["DomainRecord"][];
            last_checked_at: components["schemas"]["NullableTimestamp"];
            created_at: components["schemas"]["Timestamp"];
        };
        DomainList: {
            data: components["schemas"]["Domain"][];
            has_more: boolean;
            next_cursor?: string;
        };
        /** @enum {string} */
        EmailStatus: "pending" | "scheduled" | "sent" | "delivered" | "failed" | "cancelled";
        /** @description One address or an array of addresses; each entry one mailbox, optionally with a display name. */
        EmailAddressField: string | string[];
        /** @description Exactly one of `content` (base64, with `filename`) and `attachment_id`. */
        EmailAttachmentInput: {
            /** @description The file in base64 (line breaks and spaces between the characters are ignored). */
            content?: string;
            /** @description An upload from POST /attachments, within its 24 hours. */
            attachment_id?: string;
            /** @description Required with content; overrides the upload's name otherwise. */
            filename?: string;
            /** @description Default: from the file name, else application/octet-stream. */
            content_type?: string;
            /** @description Makes the part inline, for <img src="cid:...">. */
            content_id?: string;
        };
        EmailCreate: {
            from?: string;
            to: components["schemas"]["EmailAddressField"];
            cc?: components["schemas"]["EmailAddressField"];
            bcc?: components["schemas"]["EmailAddressField"];
            reply_to?: components["schemas"]["EmailAddressField"];
            /**
             * Format: header-value
             * @description One line: a TAB is kept (white space in a header, RFC 5322), a line break or another control character is a validation_error.
             */
            subject?: string;
            /**
             * Format: message-body
             * @description Taken as written, TAB, CR, LF and form feeds included; only a NUL character is refused.
             */
            html?: string;
            /**
             * Format: message-body
             * @description Taken as written, TAB, CR, LF and form feeds included; only a NUL character is refused.
             */
            text?: string;
            template?: components["schemas"]["EmailTemplateInput"];
            /** @description Custom header fields by name. A value is one line: a TAB is kept, a line break or other control character is a validation_error. The message builder folds long values itself at their white space, so a value may be up to 16,384 characters (the References of a long thread), as long as no word in it is over 997. */
            headers?: {
                [key: string]: string;
            };
            /** @description Labels to filter by. Each is a string, or a `{name, value}` pair as Resend's SDKs send them, kept as the string `name:value` (the SDKs work unchanged with their base URL set to Mailroom's, e.g. RESEND_BASE_URL=http://127.0.0.1:3000/v1). */
            tags?: (string | {
                name: string;
                value: string;
            })[];
            attachments?: components["schemas"]["EmailAttachmentInput"][];
            scheduled_at?: string;
            /** @description Adds Mailroom's own unsubscribe link for the recipient: List-Unsubscribe with a signed MAILROOM_PUBLIC_URL/u/… address and, when that address is https, List-Unsubscribe-Post for RFC 8058 one-click. Following it unsubscribes the address's contact and adds a workspace-wide suppression. Needs exactly one recipient (the link names the address) and no List-Unsubscribe in headers (422). */
            unsubscribe?: boolean;
        };
        /** @description The content from a template, instead of html and text (422 when both are given). Rendered once, when the email is created, and stored rendered. */
        EmailTemplateInput: {
            /** @description The template's id or alias. */
            id: string;
            /** @description Default: the published version (422 template_not_published when there is none). */
            version?: number;
            /** @description The values of the version's declared variables, by name. A value's lists and objects nest at most 32 deep. */
            variables?: Record<string, unknown>;
        };
        EmailUpdate: {
            scheduled_at: string;
        };
        EmailBatchCreate: {
            emails: Record<string, unknown>[];
        };
        EmailBatchResult: {
            /** @constant */
            object: "batch";
            data: {
                index: number;
                id?: string;
                error?: {
                    code: string;
                    message: string;
                    param?: string;
                    problems?: components["schemas"]["Problems"];
                };
            }[];
        };
        SpamCheckResult: {
            /** @constant */
            object: "spam_check";
            /** @description The sum of the points of the rules that fired. */
            score: number;
            /** @description The score from which a message reads as spam. */
            threshold: number;
            spam: boolean;
            rules: {
                rule: string;
                score: number;
                description: string;
                /** @description What fired and where, one sentence each: the phrase and its part (subject, text or HTML), the link with its shown and real hosts, the image count against the word count, the missing header. */
                found: string[];
            }[];
            suggestions: string[];
        };
        EmailCancel: {
            id: string;
            /** @constant */
            object: "email_cancel";
            cancelled: boolean;
            status: components["schemas"]["EmailStatus"];
        };
        EmailSummary: {
            id: string;
            /** @constant */
            object: "email";
            from: string;
            to: string[];
            cc: string[];
            bcc: string[];
            reply_to: string[];
            subject: string;
            tags: string[];
            status: components["schemas"]["EmailStatus"];
            /**
             * @description The mode of the key that sent it; test emails only reach the sink.
             * @enum {string}
             */
            mode: "live" | "test";
            /** @description The sending domain; null for a test email from a domain the workspace does not have. */
            domain_id: string | null;
            /** @description The Message-ID header, on the sending domain: <id@domain>. */
            message_id: string;
            scheduled_at: components["schemas"]["NullableTimestamp"];
            /** @description When it was handed to delivery. */
            sent_at: components["schemas"]["NullableTimestamp"];
            /** @description The email this one is a resend of. */
            resent_from: string | null;
            /** @description The template the content was rendered from; null when the content was given. */
            template_id: string | null;
            /** @description The version of that template. */
            template_version: number | null;
            /** @description The broadcast this email is part of. */
            broadcast_id: string | null;
            /** @description The contact a broadcast's email is for. */
            contact_id: string | null;
            /** @description How many recipients bounced, also after the email was delivered (a bounce report can follow an accepted message): an email `delivered` with some bounced recipients reached only the others. */
            bounced_recipients: number;
            /** @description How many recipients reported the email as spam (`email.complained`); the email's status stays `delivered`. */
            complained_recipients: number;
            created_at: components["schemas"]["Timestamp"];
            updated_at: components["schemas"]["Timestamp"];
        };
        EmailListItem: components["schemas"]["EmailSummary"];
        Email: {
            html: string | null;
            text: string | null;
            headers: {
                [key: string]: string;
            };
            attachments: {
                filename: string;
                content_type: string;
                size: number;
                content_id: string | null;
            }[];
            recipients: {
                email: string;
                /** @enum {string} */
                type: "to" | "cc" | "bcc";
                /**
                 * @description queued and deferred (a temporary failure, retried) are open; the others are final but for one case: a bounce report (DSN) received after the remote server accepted the message turns delivered into bounced, with the report's code and diagnostic; the email's own status keeps what the SMTP transaction made it.
                 * @enum {string}
                 */
                status: "queued" | "deferred" | "delivered" | "bounced" | "suppressed" | "failed" | "cancelled";
                /** @description The reply code of the last attempt. */
                smtp_code: number | null;
                /** @description The last reply, or why the recipient was not sent to. */
                detail: string | null;
                updated_at: components["schemas"]["Timestamp"];
            }[];
        } & components["schemas"]["EmailSummary"];
        EmailList: {
            data: components["schemas"]["EmailListItem"][];
            has_more: boolean;
            next_cursor?: string;
        };
        /** @enum {string} */
        EmailEventType: "email.scheduled" | "email.queued" | "email.sent" | "email.delivered" | "email.delayed" | "email.bounced" | "email.complained" | "email.opened" | "email.clicked" | "email.replied" | "email.failed" | "email.cancelled";
        EmailEvent: {
            id: string;
            /** @constant */
            object: "event";
            type: components["schemas"]["EmailEventType"];
            email_id: string;
            created_at: components["schemas"]["Timestamp"];
            data: Record<string, unknown>;
        } & (unknown & unknown & unknown & unknown & unknown & unknown & unknown & unknown & unknown & unknown & unknown & unknown);
        EmailEventList: {
            data: components["schemas"]["EmailEvent"][];
            has_more: boolean;
            next_cursor?: string;
        };
        ScheduledEventData: {
            from: string;
            to: string[];
            subject: string;
            scheduled_at: components["schemas"]["Timestamp"];
        };
        QueuedEventData: {
            from: string;
            to: string[];
            subject: string;
            /** @description When the send delay ends. */
            send_at: components["schemas"]["Timestamp"];
        };
        SentEventData: {
            from: string;
            to: string[];
            subject: string;
        };
        CancelledEventData: {
            from: string;
            to: string[];
            subject: string;
            /** @enum {string} */
            previous_status: "pending" | "scheduled";
        };
        DeliveredEventData: {
            to: string;
            from: string;
            subject: string;
            delivered_at: components["schemas"]["Timestamp"];
            smtp_code: number;
            mx_host: string;
        };
        DelayedEventData: {
            to: string;
            from: string;
            subject: string;
            /** @description Attempts made so far. */
            attempt: number;
            next_attempt_at: components["schemas"]["Timestamp"];
            smtp_code: number | null;
            /** @description The server's reply, or what failed when there was none. */
            reason: string;
        };
        BouncedEventData: {
            to: string;
            from: string;
            subject: string;
            /**
             * @description hard: the address is bad (it is suppressed); soft: the message, the sender or a passing condition; undetermined: the reply says too little.
             * @enum {string}
             */
            bounce_type: "hard" | "soft" | "undetermined";
            /** @enum {string} */
            bounce_subtype: "no_mailbox" | "no_domain" | "mailbox_full" | "mailbox_disabled" | "message_too_large" | "content_rejected" | "policy_rejected" | "general";
            smtp_code: number | null;
            /** @description RFC 3463, e.g. 5.1.1. */
            enhanced_status_code: string;
            /** @description The organisation running the MX when known (Google, Microsoft, ...), else unknown. */
            provider: string;
            /** @enum {string} */
            recommended_action: "suppress_recipient" | "retry_later" | "reduce_message_size" | "review_content" | "check_sender_reputation" | "fix_authentication" | "review_bounce";
            original_error: string;
        };
        RepliedEventData: {
            /** @description The recipient who replied (the reply's From address when it is none of the recipients). */
            to: string;
            from: string;
            subject: string;
            /** @description The reply's From mailbox. */
            reply_from: string;
            reply_subject: string;
            /** @description The received reply, at GET /inbound/{inbound_id}. */
            inbound_id: string;
        };
        ComplainedEventData: {
            to: string;
            from: string;
            subject: string;
            /** @description RFC 5965 feedback type, e.g. abuse. */
            feedback_type: string;
            /** @description The mailbox provider that sent the report, from the report's From domain or the sending host's name (for example Yahoo, Microsoft), or unknown. */
            provider?: string;
        };
        OpenedEventData: {
            to: string;
            ip_address: string;
            user_agent: string;
            open_count: number;
            /** @description The open looks automated (privacy proxy, scanner, prefetch). */
            machine?: boolean;
            machine_reason?: string;
        };
        ClickedEventData: {
            to: string;
            url: string;
            ip_address: string;
            user_agent: string;
            click_count: number;
            /** @description The click looks automated (a link scanner). */
            machine?: boolean;
            machine_reason?: string;
        };
        FailedEventData: {
            to: string;
            from: string;
            subject: string;
            reason: string;
            /** @description Present when the recipient was suppressed when the email was created. */
            suppression_reason?: string;
        };
        /**
         * @description An event as in an email's timeline. The events of sent mail are held
         *     to the EmailEvent schema (type and data); `email.received`, of inbound
         *     mail, to ReceivedEventData.
         */
        Event: {
            id: string;
            /** @constant */
            object: "event";
            type: string;
            email_id: string | null;
            created_at: components["schemas"]["Timestamp"];
            data: Record<string, unknown>;
        };
        /** @description An inbound message, processed: `email_id` of the event is the inbound message's id (GET /inbound/{inbound_id}). */
        ReceivedEventData: {
            /** @description The From mailbox. */
            from: string;
            /** @description The envelope recipients. */
            to: string[];
            subject: string;
            message_id: string | null;
            attachment_count: number;
            /** @description The SPF result (pass, fail, softfail, neutral, none, temperror, permerror). */
            spf: string;
            /** @description The result of each DKIM signature. */
            dkim: string[];
            /** @description The DMARC result. */
            dmarc: string;
        };
        EventList: {
            data: components["schemas"]["Event"][];
            has_more: boolean;
            next_cursor?: string;
        };
        InboundEmailSummary: {
            id: string;
            /** @constant */
            object: "inbound_email";
            /**
             * @description `received`: stored (the sender had its `250`), not parsed yet, or
             *     a parsing attempt failed and is retried; the fields taken from
             *     the message (`from`, `to`, `cc`, `subject`, `message_id`, the
             *     body, `headers`, `attachments`) are empty and `auth` is null.
             *     `processed`: parsed and checked. `failed`: given up on, with
             *     `failure_reason`; the parsed fields stay empty, and the source is
             *     still served by `GET /inbound/{inbound_id}/raw`.
             * @enum {string}
             */
            status: "received" | "processed" | "failed";
            /** @description Why processing failed; null unless `status` is `failed`. */
            failure_reason: string | null;
            /** @description The receiving domain. */
            domain_id: string;
            /** @description The From mailbox, "Name <address>" or the bare address; empty when the message has none. */
            from: string;
            to: string[];
            cc: string[];
            subject: string;
            message_id: string | null;
            /** @description The email sent from this workspace that this message answers: its In-Reply-To (or else References) names that email's Message-ID. The email's timeline then has an `email.replied` event, which also counts as engagement for the replier's contact. A Message-ID that Mailroom did not give, or that belongs to another workspace, links nothing. Null until the message is processed. The link stays when that email is later deleted (`MAILROOM_EMAIL_RETENTION_DAYS`): `GET /v1/emails/{id}` then answers 404, and the filter `in_reply_to_email_id` still finds its replies. */
            in_reply_to_email_id: string | null;
            envelope: {
                /** @description The SMTP MAIL FROM; empty for the null sender. */
                mail_from: string;
                /** @description The SMTP recipients at this domain. */
                rcpt_to: string[];
            };
            /** @description Bytes of the stored message. */
            size: number;
            attachment_count: number;
            received_at: components["schemas"]["Timestamp"];
        };
        InboundEmailListItem: components["schemas"]["InboundEmailSummary"];
        InboundEmail: {
            reply_to: string[];
            text: string | null;
            html: string | null;
            headers: {
                name: string;
                value: string;
            }[];
            attachments: components["schemas"]["InboundAttachment"][];
            /** @description The SPF, DKIM and DMARC results; null until the message is `processed`. */
            auth: components["schemas"]["InboundAuthResults"] | null;
            /** @description Whether the message came over TLS. */
            tls: boolean;
        } & components["schemas"]["InboundEmailSummary"];
        InboundAttachment: {
            index: number;
            filename: string | null;
            content_type: string;
            /** @description Decoded bytes. */
            size: number;
            content_id: string | null;
            /** @enum {string} */
            disposition: "attachment" | "inline";
        };
        /**
         * @description An RFC 8601 result.
         * @enum {string}
         */
        InboundAuthResult: "pass" | "fail" | "softfail" | "neutral" | "none" | "temperror" | "permerror" | "policy" | "skipped";
        InboundAuthResults: {
            spf: {
                result: components["schemas"]["InboundAuthResult"];
                domain: string | null;
            };
            /** @description One entry per DKIM-Signature; empty when the message is not signed. */
            dkim: {
                result: components["schemas"]["InboundAuthResult"];
                domain: string;
                selector: string | null;
                /** @description Whether the signing domain aligns with the From domain (DMARC, RFC 7489 §3.1). */
                aligned: boolean;
            }[];
            dmarc: {
                result: components["schemas"]["InboundAuthResult"];
                /** @description The published policy: none, quarantine or reject. */
                policy: string | null;
                domain: string | null;
            };
            /** @description The Authentication-Results field value (RFC 8601). */
            authentication_results: string;
        };
        InboundEmailList: {
            data: components["schemas"]["InboundEmailListItem"][];
            has_more: boolean;
            next_cursor?: string;
        };
        /** @enum {string} */
        QueueItemState: "queued" | "deferred" | "sending" | "held";
        QueueLastReply: {
            code: number | null;
            text: string;
        } | null;
        QueueDestination: {
            /** @constant */
            object: "queue_destination";
            domain: string;
            /** @description Recipients with no attempt yet. */
            queued: number;
            /** @description Recipients waiting for a retry. */
            deferred: number;
            /** @description Recipients of emails a delivery holds under a lease. */
            leased: number;
            /** @description When the last of those leases runs out; null when none is leased. */
            lease_ends_at: components["schemas"]["NullableTimestamp"];
            emails: number;
            held: boolean;
            held_at: components["schemas"]["NullableTimestamp"];
            oldest_at: components["schemas"]["Timestamp"];
            /** @description null while the domain is held. */
            next_attempt_at: components["schemas"]["NullableTimestamp"];
            last_reply: components["schemas"]["QueueLastReply"];
        };
        QueueDestinationList: {
            data: components["schemas"]["QueueDestination"][];
            has_more: boolean;
            next_cursor?: string;
        };
        QueueItem: {
            /** @constant */
            object: "queue_item";
            email_id: string;
            domain: string;
            subject: string;
            recipients: string[];
            state: components["schemas"]["QueueItemState"];
            attempts: number;
            next_attempt_at: components["schemas"]["NullableTimestamp"];
            /** @description Delivery gives up (a soft bounce) after this. */
            expires_at: components["schemas"]["Timestamp"];
            last_reply: components["schemas"]["QueueLastReply"];
            created_at: components["schemas"]["Timestamp"];
        };
        QueueItemList: {
            data: components["schemas"]["QueueItem"][];
            has_more: boolean;
            next_cursor?: string;
        };
        QueueRetry: {
            domain?: string;
            email_id?: string;
        };
        QueueRetryResult: {
            /** @constant */
            object: "queue_retry";
            retried: number;
            /** @description Matching emails (one per destination domain) under a lease, left alone. */
            leased: number;
            /** @description When the last of those leases runs out; null when none is leased. */
            lease_ends_at: components["schemas"]["NullableTimestamp"];
        };
        QueueDestinationInput: {
            domain: string;
        };
        QueueHold: {
            /** @constant */
            object: "queue_hold";
            domain: string;
            held: boolean;
            held_at: components["schemas"]["NullableTimestamp"];
        };
        /** @enum {string} */
        SuppressionReason: "hard_bounce" | "complaint" | "unsubscribe" | "manual";
        SuppressionCreate: {
            email: string;
        };
        Suppression: {
            id: string;
            /** @constant */
            object: "suppression";
            /** @description Normalised: trimmed and lower-cased. */
            email: string;
            reason: components["schemas"]["SuppressionReason"];
            created_at: components["schemas"]["Timestamp"];
        };
        SuppressionList: {
            data: components["schemas"]["Suppression"][];
            has_more: boolean;
            next_cursor?: string;
        };
        TagCreate: {
            /** @description The length limits apply to the name as it is kept: without leading and trailing white space, and in Unicode NFC, where a character written decomposed (e and a combining accent) counts as the one character it composes to. */
            name: string;
        };
        Tag: {
            id: string;
            /** @constant */
            object: "tag";
            name: string;
            created_at: components["schemas"]["Timestamp"];
        };
        TagList: {
            data: components["schemas"]["Tag"][];
            has_more: boolean;
            next_cursor?: string;
        };
        /** @description Lower-case letters, digits, ".", "_" and "-", starting with a letter; 64 at most; not starting with tpl_, and not render (the path /templates/render is the preview). */
        TemplateAlias: string;
        /**
         * Format: multi-line
         * @description A template source: TAB, CR and LF are kept (line breaks become one space in the rendered subject); another control character is a validation_error.
         */
        TemplateSubject: string;
        /**
         * Format: message-body
         * @description Taken as written, TAB, CR, LF and form feeds included; only a NUL character is refused. At most 10000 Liquid tags and outputs ({% %} and {{ }}) and blocks nested at most 100 deep: more is 422 template_invalid.
         */
        TemplateSource: string;
        TemplateVariableInput: {
            key: string;
            type: components["schemas"]["TemplateVariableType"];
            /** @default false */
            required: boolean;
            /** @description A value of the declared type, used when a send leaves the variable out; null for none. Its lists and objects nest at most 32 deep. */
            fallback?: unknown;
        };
        /** @enum {string} */
        TemplateVariableType: "string" | "number" | "boolean" | "object" | "list";
        TemplateVariable: {
            key: string;
            type: components["schemas"]["TemplateVariableType"];
            required: boolean;
            /** @description The value used when a send leaves the variable out; null for none. */
            fallback: unknown;
        };
        TemplateVariableInputs: components["schemas"]["TemplateVariableInput"][];
        TemplateCreate: {
            name: string;
            alias?: components["schemas"]["TemplateAlias"];
            subject: components["schemas"]["TemplateSubject"];
            html?: components["schemas"]["TemplateSource"];
            text?: components["schemas"]["TemplateSource"];
            /** @description The default from of sends by this version; the send's own `from` wins. */
            from?: string;
            /** @description The default reply_to of sends by this version. */
            reply_to?: components["schemas"]["EmailAddressField"];
            variables?: components["schemas"]["TemplateVariableInputs"];
        };
        TemplateUpdate: {
            name?: string;
            alias?: components["schemas"]["TemplateAlias"] | null;
            subject?: components["schemas"]["TemplateSubject"];
            html?: components["schemas"]["TemplateSource"] | null;
            text?: components["schemas"]["TemplateSource"] | null;
            from?: string | null;
            reply_to?: components["schemas"]["EmailAddressField"] | null;
            variables?: components["schemas"]["TemplateVariableInputs"];
        };
        TemplatePublish: {
            /** @description Default: the latest version. */
            version?: number;
        };
        TemplateDuplicate: {
            name?: string;
            alias?: components["schemas"]["TemplateAlias"];
        };
        TemplateRenderRequest: {
            /** @description The values, by variable name. A value's lists and objects nest at most 32 deep. */
            variables?: Record<string, unknown>;
            /** @description Default: the published version. */
            version?: number;
        };
        TemplatePreview: {
            /**
             * Format: multi-line
             * @description A template source: TAB, CR and LF are kept (line breaks become one space in the rendered subject); another control character is a validation_error.
             */
            subject?: string;
            html?: components["schemas"]["TemplateSource"];
            text?: components["schemas"]["TemplateSource"];
            variables?: components["schemas"]["TemplateVariableInputs"];
            /** @description The values, by variable name (samples of `contact` and `unsubscribe_url` included). A value's lists and objects nest at most 32 deep. */
            data?: Record<string, unknown>;
        };
        TemplateRender: {
            /** @constant */
            object: "template_render";
            /** @description Line breaks in the rendered subject become one space. */
            subject: string;
            html: string | null;
            /** @description The rendered text, or text derived from the rendered HTML (links as `text [url]`, lines wrapped at 78). */
            text: string;
        };
        TemplateVersionSummary: {
            /** @constant */
            object: "template_version";
            template_id: string;
            version: number;
            subject: string;
            from: string | null;
            reply_to: string[] | null;
            variables: components["schemas"]["TemplateVariable"][];
            created_at: components["schemas"]["Timestamp"];
            /** @description When the version was last made the published one; null if never. */
            published_at: components["schemas"]["NullableTimestamp"];
        };
        TemplateVersionListItem: components["schemas"]["TemplateVersionSummary"];
        TemplateVersion: {
            html: string | null;
            text: string | null;
        } & components["schemas"]["TemplateVersionSummary"];
        TemplateSummary: {
            id: string;
            /** @constant */
            object: "template";
            name: string;
            alias: string | null;
            /** @description The version sends use when they name none. */
            published_version: number | null;
            latest_version: number;
            /** @description The declarations of the published version, or of the latest while none is published. */
            variables: components["schemas"]["TemplateVariable"][];
            created_at: components["schemas"]["Timestamp"];
            updated_at: components["schemas"]["Timestamp"];
        };
        TemplateListItem: components["schemas"]["TemplateSummary"];
        Template: {
            latest: components["schemas"]["TemplateVersion"];
            published: components["schemas"]["TemplateVersion"] | null;
        } & components["schemas"]["TemplateSummary"];
        TemplateList: {
            data: components["schemas"]["TemplateListItem"][];
            has_more: boolean;
            next_cursor?: string;
        };
        TemplateVersionList: {
            data: components["schemas"]["TemplateVersionListItem"][];
            has_more: boolean;
            next_cursor?: string;
        };
        /** @enum {string} */
        WebhookEventType: "email.scheduled" | "email.queued" | "email.sent" | "email.delivered" | "email.delayed" | "email.bounced" | "email.complained" | "email.failed" | "email.cancelled" | "email.opened" | "email.clicked" | "email.replied" | "email.received" | "broadcast.sending" | "broadcast.paused" | "broadcast.sent" | "broadcast.cancelled" | "contact.unsubscribed";
        WebhookCreate: {
            url: string;
            event_types: components["schemas"]["WebhookEventType"][];
            description?: string | null;
            /** @default true */
            enabled: boolean;
        };
        WebhookUpdate: {
            url?: string;
            event_types?: components["schemas"]["WebhookEventType"][];
            description?: string | null;
            enabled?: boolean;
        };
        WebhookFields: {
            id: string;
            /** @constant */
            object: "webhook";
            url: string;
            description: string | null;
            event_types: components["schemas"]["WebhookEventType"][];
            enabled: boolean;
            /** @description Why it was disabled: a 410 answer, 5 days of failures, or through the API. */
            disabled_reason: string | null;
            disabled_at: components["schemas"]["NullableTimestamp"];
            /** @description Start of the current run of failed attempts; null when the last attempt succeeded. */
            failing_since: components["schemas"]["NullableTimestamp"];
            created_at: components["schemas"]["Timestamp"];
            updated_at: components["schemas"]["Timestamp"];
        };
        Webhook: components["schemas"]["WebhookFields"];
        WebhookWithSecret: {
            /** @description The signing secret, shown on create and rotation only. */
            secret: string;
        } & components["schemas"]["WebhookFields"];
        WebhookList: {
            data: components["schemas"]["Webhook"][];
            has_more: boolean;
            next_cursor?: string;
        };
        WebhookAttempt: {
            attempt: number;
            attempted_at: components["schemas"]["Timestamp"];
            succeeded: boolean;
            /** @description The HTTP status; null when no answer came (refused, timed out, address not allowed). */
            response_status: number | null;
            duration_ms: number;
            /** @description What went wrong; null on success. */
            error: string | null;
            /** @description The first 1024 bytes of the answer. */
            response_body: string | null;
        };
        WebhookDelivery: {
            id: string;
            /** @constant */
            object: "webhook_delivery";
            webhook_id: string;
            /** @description The webhook-id header sent. */
            message_id: string;
            event_id: string | null;
            event_type: string;
            /** @enum {string} */
            status: "pending" | "succeeded" | "failed";
            test: boolean;
            attempt_count: number;
            /** @description When pending: the next attempt (or the end of the one in flight). */
            next_attempt_at: components["schemas"]["NullableTimestamp"];
            last_error: string | null;
            replay_of: string | null;
            /** @description The JSON body POSTed. */
            payload: Record<string, unknown>;
            /** @description Oldest first. */
            attempts: components["schemas"]["WebhookAttempt"][];
            created_at: components["schemas"]["Timestamp"];
            updated_at: components["schemas"]["Timestamp"];
        };
        WebhookDeliveryList: {
            data: components["schemas"]["WebhookDelivery"][];
            has_more: boolean;
            next_cursor?: string;
        };
    };
    responses: {
        /** @description Malformed request, bad query parameter or invalid cursor. */
        BadRequest: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description Missing or invalid API key. */
        Unauthorized: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description The key lacks the scope for this operation. */
        Forbidden: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description No such record in this workspace. */
        NotFound: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description Idempotency conflict. */
        Conflict: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description Validation error or a state that forbids the action. */
        Unprocessable: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description Rate limit or send quota exceeded. */
        TooManyRequests: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description Unexpected failure; the request id identifies it in the log. */
        InternalError: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description `storage_full`: the server's storage (its disk, or PostgreSQL's) is full, so nothing of the request was kept. `store_unavailable`: the server's store cannot be reached or locked right now (PostgreSQL or its pooler restarting, SQLite locked by another process), so nothing of the request was kept. Retry-After says when to try again. */
        ServiceUnavailable: {
            headers: {
                /** @description Seconds to wait before repeating the request. */
                "Retry-After"?: number;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
    };
    parameters: {
        Limit: number;
        StartingAfter: string;
        EndingBefore: string;
        IdempotencyKey: string;
        CreatedAfter: string;
        CreatedBefore: string;
        BroadcastId: string;
        /** @description The template's id (tpl_…) or its alias. */
        TemplateRef: string;
    };
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    getAnalytics: {
        parameters: {
            query?: {
                from?: string;
                to?: string;
                granularity?: "hour" | "day";
                /** @description Live mail (the default) or the mail of test keys: they are never counted together. */
                mode?: "live" | "test";
                domain_id?: string;
                tags?: string[];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The counts */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Analytics"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listApiKeys: {
        parameters: {
            query?: {
                /** @description Only live or only test keys. */
                mode?: "live" | "test";
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of keys */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKeyList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    createApiKey: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ApiKeyCreate"];
            };
        };
        responses: {
            /** @description The key with its raw token */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKeyCreated"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            409: components["responses"]["Conflict"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getCurrentApiKey: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The calling key */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CurrentApiKey"];
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getApiKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                key_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The key */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKey"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    revokeApiKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                key_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Revoked */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listApiKeyActivity: {
        parameters: {
            query?: {
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
            };
            header?: never;
            path: {
                key_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of activity */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApiKeyActivityList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    createAttachment: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AttachmentCreate"];
            };
        };
        responses: {
            /** @description The upload */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Attachment"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listBroadcasts: {
        parameters: {
            query?: {
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
                status?: components["schemas"]["BroadcastStatus"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of broadcasts */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BroadcastList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    createBroadcast: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BroadcastCreate"];
            };
        };
        responses: {
            /** @description The broadcast */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Broadcast"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            409: components["responses"]["Conflict"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The broadcast */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Broadcast"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    deleteBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    updateBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BroadcastUpdate"];
            };
        };
        responses: {
            /** @description The broadcast */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Broadcast"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listBroadcastSkips: {
        parameters: {
            query?: {
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
            };
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of skipped contacts */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BroadcastSkipList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    previewBroadcastAudience: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["BroadcastAudienceRequest"];
            };
        };
        responses: {
            /** @description The size and first contacts of the audience */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BroadcastAudience"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    previewBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BroadcastPreviewRequest"];
            };
        };
        responses: {
            /** @description The rendered message */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BroadcastRender"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    sendBroadcastTest: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BroadcastTestRequest"];
            };
        };
        responses: {
            /** @description The test emails */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BroadcastTestResult"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            409: components["responses"]["Conflict"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    sendBroadcast: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["BroadcastSendRequest"];
            };
        };
        responses: {
            /** @description The broadcast */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Broadcast"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            409: components["responses"]["Conflict"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    pauseBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The broadcast */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Broadcast"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    resumeBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The broadcast */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Broadcast"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    cancelBroadcast: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                broadcast_id: components["parameters"]["BroadcastId"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The broadcast */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Broadcast"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listContacts: {
        parameters: {
            query?: {
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
                email?: string;
                status?: components["schemas"]["ContactStatus"];
                engagement_tier?: components["schemas"]["EngagementTier"];
                tag_id?: string;
                created_after?: components["parameters"]["CreatedAfter"];
                created_before?: components["parameters"]["CreatedBefore"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of contacts */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ContactList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    createContact: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ContactCreate"];
            };
        };
        responses: {
            /** @description The contact */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Contact"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            409: components["responses"]["Conflict"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    bulkUpsertContacts: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ContactBulkRequest"];
            };
        };
        responses: {
            /** @description The summary */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ContactBulkResult"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            409: components["responses"]["Conflict"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    upsertContactByEmail: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The address, URL-encoded. */
                email: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ContactUpsert"];
            };
        };
        responses: {
            /** @description The contact */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Contact"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getContact: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                contact_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The contact */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Contact"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    deleteContact: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                contact_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    updateContact: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                contact_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ContactUpdate"];
            };
        };
        responses: {
            /** @description The contact */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Contact"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    unsubscribeContact: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                contact_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["ContactUnsubscribe"];
            };
        };
        responses: {
            /** @description The contact */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Contact"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    addContactTag: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                contact_id: string;
                tag_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Tagged */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    removeContactTag: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                contact_id: string;
                tag_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Untagged */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listDomains: {
        parameters: {
            query?: {
                /** @description Only domains with this verification status. */
                status?: "unverified" | "verifying" | "active";
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of domains */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DomainList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    createDomain: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DomainCreate"];
            };
        };
        responses: {
            /** @description The new domain with its records */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Domain"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getDomain: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                domain_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The domain */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Domain"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    deleteDomain: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                domain_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    updateDomain: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                domain_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DomainUpdate"];
            };
        };
        responses: {
            /** @description The updated domain */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Domain"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    verifyDomain: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                domain_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The domain after the check */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Domain"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    rotateDomainDkim: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                domain_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The domain with the pending key's records */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Domain"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listEmails: {
        parameters: {
            query?: {
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
                status?: components["schemas"]["EmailStatus"];
                to?: string;
                from?: string;
                subject?: string;
                tags?: string[];
                created_after?: components["parameters"]["CreatedAfter"];
                created_before?: components["parameters"]["CreatedBefore"];
                domain_id?: string;
                /** @description Only the mail of live keys, or only that of test keys. */
                mode?: "live" | "test";
                /** @description A template's id or alias. */
                template_id?: string;
                broadcast_id?: string;
                /** @description Emails with a recipient that bounced, or one that complained. */
                outcome?: "bounced" | "complained";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of emails */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EmailList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    createEmail: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EmailCreate"];
            };
        };
        responses: {
            /** @description The email */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Email"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            409: components["responses"]["Conflict"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    checkEmail: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EmailCreate"];
            };
        };
        responses: {
            /** @description The score */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SpamCheckResult"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    createEmailBatch: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
                /** @description `partial` (the default): a failing item fails alone. `strict`: all or nothing. */
                "Mailroom-Batch-Validation"?: "partial" | "strict";
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EmailBatchCreate"];
            };
        };
        responses: {
            /** @description One result per item */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EmailBatchResult"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            409: components["responses"]["Conflict"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getEmail: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                email_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The email */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Email"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    updateEmail: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                email_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EmailUpdate"];
            };
        };
        responses: {
            /** @description The email */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Email"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getEmailRaw: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                email_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The message (Content-Disposition attachment, `<id>.eml`). */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "message/rfc822": string;
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getEmailAttachment: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                email_id: string;
                /** @description The attachment's place in the email's `attachments` (from 0). */
                index: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The attachment's bytes. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/octet-stream": string;
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    cancelEmail: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                email_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The result of the attempt */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EmailCancel"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    resendEmail: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                email_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The new email */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Email"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listEmailEvents: {
        parameters: {
            query?: {
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
            };
            header?: never;
            path: {
                email_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of events */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EmailEventList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listEvents: {
        parameters: {
            query?: {
                event_type?: "scheduled" | "queued" | "sent" | "delivered" | "delayed" | "bounced" | "complained" | "opened" | "clicked" | "replied" | "failed" | "cancelled" | "received";
                email_id?: string;
                domain_id?: string;
                to?: string;
                from?: string;
                tags?: string[];
                created_after?: components["parameters"]["CreatedAfter"];
                created_before?: components["parameters"]["CreatedBefore"];
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of events */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getEvent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                event_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The event */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Event"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listInboundEmails: {
        parameters: {
            query?: {
                /** @description Recipient address, partial match. */
                to?: string;
                /** @description Sender address, partial match. */
                from?: string;
                /** @description The receiving domain. */
                domain_id?: string;
                /** @description The replies to one email sent from this workspace. */
                in_reply_to_email_id?: string;
                received_after?: string;
                received_before?: string;
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of received messages */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InboundEmailList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getInboundEmail: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                inbound_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The message */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InboundEmail"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getInboundEmailRaw: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                inbound_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The message (Content-Disposition attachment, `<id>.eml`). */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "message/rfc822": string;
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getInboundAttachment: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                inbound_id: string;
                /** @description The attachment's `index` in the message's `attachments`. */
                index: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The attachment's bytes. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/octet-stream": string;
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listQueue: {
        parameters: {
            query?: {
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of destinations */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueDestinationList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listQueueItems: {
        parameters: {
            query: {
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
                domain: string;
                state?: components["schemas"]["QueueItemState"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of waiting emails */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueItemList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    retryQueue: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["QueueRetry"];
            };
        };
        responses: {
            /** @description What was made due */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueRetryResult"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    holdQueue: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["QueueDestinationInput"];
            };
        };
        responses: {
            /** @description The hold */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueHold"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    releaseQueue: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["QueueDestinationInput"];
            };
        };
        responses: {
            /** @description The domain, no longer held */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueHold"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listSuppressions: {
        parameters: {
            query?: {
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
                reason?: components["schemas"]["SuppressionReason"];
                email?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of suppressions */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SuppressionList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    createSuppression: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SuppressionCreate"];
            };
        };
        responses: {
            /** @description The suppression */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Suppression"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            409: components["responses"]["Conflict"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    deleteSuppression: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The suppression's id (`sup_…`) or the address, URL-encoded. */
                suppression: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Lifted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listTags: {
        parameters: {
            query?: {
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of tags */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TagList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    createTag: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TagCreate"];
            };
        };
        responses: {
            /** @description The tag */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Tag"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            409: components["responses"]["Conflict"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    deleteTag: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                tag_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listTemplates: {
        parameters: {
            query?: {
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
                name?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of templates */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TemplateList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    createTemplate: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TemplateCreate"];
            };
        };
        responses: {
            /** @description The template */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Template"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            409: components["responses"]["Conflict"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    previewTemplate: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TemplatePreview"];
            };
        };
        responses: {
            /** @description The rendered parts */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TemplateRender"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getTemplate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The template's id (tpl_…) or its alias. */
                template_id: components["parameters"]["TemplateRef"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The template */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Template"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    deleteTemplate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The template's id (tpl_…) or its alias. */
                template_id: components["parameters"]["TemplateRef"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    updateTemplate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The template's id (tpl_…) or its alias. */
                template_id: components["parameters"]["TemplateRef"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TemplateUpdate"];
            };
        };
        responses: {
            /** @description The template */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Template"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    publishTemplate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The template's id (tpl_…) or its alias. */
                template_id: components["parameters"]["TemplateRef"];
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["TemplatePublish"];
            };
        };
        responses: {
            /** @description The template */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Template"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    duplicateTemplate: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description The template's id (tpl_…) or its alias. */
                template_id: components["parameters"]["TemplateRef"];
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["TemplateDuplicate"];
            };
        };
        responses: {
            /** @description The new template */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Template"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            409: components["responses"]["Conflict"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listTemplateVersions: {
        parameters: {
            query?: {
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
            };
            header?: never;
            path: {
                /** @description The template's id (tpl_…) or its alias. */
                template_id: components["parameters"]["TemplateRef"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of versions */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TemplateVersionList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getTemplateVersion: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The template's id (tpl_…) or its alias. */
                template_id: components["parameters"]["TemplateRef"];
                version: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The version */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TemplateVersion"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    renderTemplate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The template's id (tpl_…) or its alias. */
                template_id: components["parameters"]["TemplateRef"];
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["TemplateRenderRequest"];
            };
        };
        responses: {
            /** @description The rendered parts */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TemplateRender"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listWebhooks: {
        parameters: {
            query?: {
                /** @description Only enabled or only disabled endpoints. */
                enabled?: boolean;
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of endpoints */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    createWebhook: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WebhookCreate"];
            };
        };
        responses: {
            /** @description The endpoint with its secret */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookWithSecret"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            409: components["responses"]["Conflict"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoint */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    deleteWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    updateWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WebhookUpdate"];
            };
        };
        responses: {
            /** @description The endpoint */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    rotateWebhookSecret: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoint with its new secret */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookWithSecret"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            409: components["responses"]["Conflict"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    testWebhook: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The test delivery */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDelivery"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            409: components["responses"]["Conflict"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listWebhookDeliveries: {
        parameters: {
            query?: {
                status?: "pending" | "succeeded" | "failed";
                limit?: components["parameters"]["Limit"];
                starting_after?: components["parameters"]["StartingAfter"];
                ending_before?: components["parameters"]["EndingBefore"];
            };
            header?: never;
            path: {
                webhook_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of deliveries */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDeliveryList"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getWebhookDelivery: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                webhook_id: string;
                delivery_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The delivery */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDelivery"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    replayWebhookDelivery: {
        parameters: {
            query?: never;
            header?: {
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                webhook_id: string;
                delivery_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The new delivery */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDelivery"];
                };
            };
            400: components["responses"]["BadRequest"];
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            404: components["responses"]["NotFound"];
            409: components["responses"]["Conflict"];
            422: components["responses"]["Unprocessable"];
            429: components["responses"]["TooManyRequests"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
}
