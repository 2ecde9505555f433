/*
 * sluice_secrets.h — the job's tenant's secrets from a C task (contract 0.2 and later):
 * sluice_secret_get and sluice_secret_free. Included by sluice_task.h when the bindings
 * have `sluice:task/secrets` (bindings/v0.2, bindings/v0.3); include sluice_task.h, not
 * this file.
 */
#ifndef SLUICE_SECRETS_H
#define SLUICE_SECRETS_H

#include "sluice_task.h"

#ifdef SLUICE_TASK_SECRETS_SECRET_ERROR_NOT_GRANTED
/*
 * Secrets (contract 0.2): the job's tenant's secrets granted to the job type
 * (`sluice types set T --secret NAME`), read by name (docs/secrets.md).
 *
 *   sluice_secret_t key;
 *   sluice_secret_error_t err;
 *   if (!sluice_secret_get("STRIPE_KEY", &key, &err))
 *       return sluice_fatal("%s", err.message);   // err.code: "not-granted" / "not-found"
 *   ... key.value (NUL-terminated, key.len bytes) ...
 *   sluice_secret_free(&key);
 *
 * On success *secret owns a malloc'ed copy of the value: the task must call
 * sluice_secret_free on it (which overwrites the bytes before freeing them). On failure
 * *secret is zeroed (freeing it is harmless) and err->code is "not-granted" (the type is
 * not granted the name) or "not-found" (granted, but the tenant has not set it), with
 * err->message "secret NAME: <code> (<how to fix it>)". Either will be the same on a
 * retry: fail with sluice_fatal. The value is masked as `[secret NAME]` in everything the
 * host keeps of this attempt, but only as it is: log it as it is, never encoded.
 */
typedef struct sluice_secret_t {
    char *value; /* NUL-terminated (values never hold a NUL) */
    size_t len;  /* bytes, without the NUL */
} sluice_secret_t;

typedef struct sluice_secret_error_t {
    const char *code;  /* "not-granted" or "not-found" */
    char message[256]; /* "secret NAME: <code> (<how to fix it>)", truncated to fit */
} sluice_secret_error_t;

/* Reads secret `name` (NUL-terminated) into *secret; false with *err filled in if it
 * cannot be read. */
static inline bool sluice_secret_get(const char *name, sluice_secret_t *secret, sluice_secret_error_t *err) {
    task_string_t wit_name = {(uint8_t *)name, strlen(name)};
    task_string_t value;
    sluice_task_secrets_secret_error_t refused;
    memset(secret, 0, sizeof *secret);
    if (!sluice_task_secrets_get(&wit_name, &value, &refused)) {
        if (refused.tag == SLUICE_TASK_SECRETS_SECRET_ERROR_NOT_GRANTED) {
            err->code = "not-granted";
            snprintf(err->message, sizeof err->message,
                     "secret %s: not-granted (grant it with `sluice types set TYPE --secret %s`)", name, name);
        } else {
            err->code = "not-found";
            snprintf(err->message, sizeof err->message,
                     "secret %s: not-found (granted, but not set: `sluice secrets set %s`)", name, name);
        }
        return false;
    }
    /* The host's copy was malloc'ed by cabi_realloc (an empty one is not allocated):
     * grow it by the NUL rather than copying the value again. */
    char *text = (char *)(value.len ? realloc(value.ptr, value.len + 1) : malloc(1));
    if (!text) abort();
    text[value.len] = 0;
    secret->value = text;
    secret->len = value.len;
    return true;
}

/* Overwrites and frees what sluice_secret_get filled in (safe on a zeroed secret). */
static inline void sluice_secret_free(sluice_secret_t *secret) {
    if (secret->value) {
        volatile char *p = secret->value;
        for (size_t i = 0; i < secret->len; i++) p[i] = 0;
        free(secret->value);
    }
    secret->value = NULL;
    secret->len = 0;
}
#endif /* SLUICE_TASK_SECRETS_SECRET_ERROR_NOT_GRANTED */

#endif /* SLUICE_SECRETS_H */
