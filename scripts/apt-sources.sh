# shellcheck shell=bash
# Where this machine's apt takes Debian packages from, for the scripts that need Debian sources
# (deb-src entries for `apt-get source`) or a mirror (debootstrap): read from apt's own index
# targets, whatever the format of its sources (deb822 or one-line), so that a local or corporate
# mirror is used as configured and no host name is written in this repository. Sourced.

# apt_debian_repos: "URI SUITE COMPONENT" for each repository of this Debian release (its suites
# named for the codename: bookworm, bookworm-updates, bookworm-security) apt takes packages
# from. Read from the sources alone (--no-release-info): a build container that removed its
# package lists after installing still names its mirror.
apt_debian_repos() {
    local codename
    codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || return 0
    # shellcheck disable=SC2016 # apt's own $(FIELD) placeholders
    apt-get indextargets --no-release-info --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' \
        'Identifier: Packages' 'Target-Of: deb' 2>/dev/null |
        awk -v c="$codename" '$2 == c || index($2, c "-") == 1' | sort -u
}

# apt_deb_src_entries: deb822 deb-src stanzas for those repositories; nothing when there is none.
apt_deb_src_entries() {
    apt_debian_repos | while read -r uri suite comp; do
        printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: %s\n' "$uri" "$suite" "$comp"
        printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n'
    done
}

# apt_debian_mirror: the main archive among them (not the security one), for debootstrap;
# empty when apt names none.
apt_debian_mirror() {
    apt_debian_repos | awk '$2 !~ /-security$/ && $2 !~ /-updates$/ { print $1; exit }'
}
