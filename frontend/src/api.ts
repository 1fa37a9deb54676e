// Every GraphQL operation the dashboard sends, in one place: codegen types
// them from ../schema/*.graphqls, so a schema change that breaks the dashboard
// fails `npm run build`.
import { graphql } from './gql';

export const MeQuery = graphql(`
  query Me {
    me {
      id
      username
      scope
      mustChangePassword
    }
  }
`);

export const FeedRowFields = graphql(`
  fragment FeedRow on Feed {
    id
    name
    type
    category
    status
    statusMessage
    enabled
    pollingFrequency
    retentionPeriod
    backfillDays
    description
    lastIngestion
    collectionUrl
    username
    hasPassword
    iocCount
    canEdit
    canDelete
    canReset
    allowRuleActions
    premiumKind
    builtinKind
    icon
    needs
    missingSetting
    nextRun
    lastRun {
      id
      startedAt
      endedAt
      note
    }
  }
`);

export const FeedsQuery = graphql(`
  query Feeds($search: String, $filter: FeedFilter, $orderBy: FeedOrder, $first: Int, $after: String) {
    feeds(search: $search, filter: $filter, orderBy: $orderBy, first: $first, after: $after) {
      totalCount
      nodes {
        ...FeedRow
      }
      pageInfo {
        endCursor
        hasNextPage
      }
    }
  }
`);

// Facets are asked for separately so that a server without them still shows the table.
export const FeedFacetsQuery = graphql(`
  query FeedFacets($search: String, $filter: FeedFilter) {
    feeds(search: $search, filter: $filter, first: 0) {
      facets {
        column
        values {
          value
          count
        }
      }
    }
  }
`);

export const FeedOptionsQuery = graphql(`
  query FeedOptions {
    feeds(first: 500, orderBy: { field: NAME, direction: ASC }) {
      nodes {
        id
        name
      }
    }
  }
`);

export const FeedQuery = graphql(`
  query Feed($id: ID!) {
    feed(id: $id) {
      ...FeedRow
      cursor
    }
  }
`);

export const FeedRunsQuery = graphql(`
  query FeedRuns($feedId: ID!, $first: Int) {
    feedRuns(feedId: $feedId, first: $first) {
      id
      startedAt
      endedAt
      fetched
      stored
      rejected
      rejections {
        position
        reason
      }
      errorKind
      errorDetail
      note
      backlogWritten
      backlogTotal
      expectedCompletion
    }
  }
`);

export const CreateCustomFeedMutation = graphql(`
  mutation CreateCustomFeed($input: CustomFeedInput!) {
    createCustomFeed(input: $input) {
      ...FeedRow
    }
  }
`);

export const UpdateFeedMutation = graphql(`
  mutation UpdateFeed($id: ID!, $input: FeedUpdateInput!) {
    updateFeed(id: $id, input: $input) {
      ...FeedRow
    }
  }
`);

export const DeleteFeedMutation = graphql(`
  mutation DeleteFeed($id: ID!) {
    deleteFeed(id: $id)
  }
`);

export const SetFeedEnabledMutation = graphql(`
  mutation SetFeedEnabled($id: ID!, $enabled: Boolean!, $confirm: Boolean) {
    setFeedEnabled(id: $id, enabled: $enabled, confirm: $confirm) {
      ...FeedRow
    }
  }
`);

export const RunFeedNowMutation = graphql(`
  mutation RunFeedNow($id: ID!) {
    runFeedNow(id: $id) {
      ...FeedRow
    }
  }
`);

export const ResetFeedCursorMutation = graphql(`
  mutation ResetFeedCursor($id: ID!) {
    resetFeedCursor(id: $id) {
      ...FeedRow
    }
  }
`);

export const ResetPremiumFeedMutation = graphql(`
  mutation ResetPremiumFeed($id: ID!) {
    resetPremiumFeed(id: $id) {
      ...FeedRow
    }
  }
`);

export const CreatePremiumFeedMutation = graphql(`
  mutation CreatePremiumFeed($input: PremiumFeedInput!) {
    createPremiumFeed(input: $input) {
      ...FeedRow
    }
  }
`);

// The premium edit and create forms are built from this, and only this.
export const PremiumFeedKindsQuery = graphql(`
  query PremiumFeedKinds {
    premiumFeedKinds {
      kind
      title
      description
      editableFields
      requiredToEnable
      pollingFrequency {
        min
        max
      }
      backfillDays {
        min
        max
      }
      retentionPeriod {
        min
        max
      }
      fixedRetentionDays
      creatable
      maxFeeds
      categories
      namePrefix
      iocsPerPoll
      available
    }
  }
`);

// How many feeds each premium kind has, to tell when a creatable kind is full.
export const PremiumFeedCountsQuery = graphql(`
  query PremiumFeedCounts {
    feeds(filter: { type: [PREMIUM] }, first: 500) {
      nodes {
        id
        premiumKind
      }
    }
  }
`);

export const FeedStatusChangedSubscription = graphql(`
  subscription FeedStatusChanged {
    feedStatusChanged {
      ...FeedRow
    }
  }
`);

export const IocsQuery = graphql(`
  query Iocs($filter: IocFilter, $orderBy: IocOrder, $first: Int, $after: String) {
    iocs(filter: $filter, orderBy: $orderBy, first: $first, after: $after) {
      totalCount
      totalCountCapped
      nodes {
        id
        type
        value
        score
        tags
        sources {
          source
          feed {
            id
            name
          }
        }
        firstSeen
        lastSeen
        expirationDate
        warnings {
          list
          entry
        }
      }
      pageInfo {
        endCursor
        hasNextPage
      }
    }
  }
`);

export const IocQuery = graphql(`
  query Ioc($id: ID!) {
    ioc(id: $id) {
      id
      type
      value
      score
      tags
      firstSeen
      lastSeen
      expirationDate
      sources {
        source
        score
        tags
        firstSeen
        lastSeen
        expiresAt
        feed {
          id
          name
          type
        }
      }
    }
  }
`);

export const TenantFields = graphql(`
  fragment TenantFields on Tenant {
    id
    name
    contact
    contactEmail
    contactPhone
    address
    info
    retentionGroup
    mfaEnabled
    authenticationMethod
    ingestionLimit
    orgId
    groupName
    dsNum
    userNum
    createdAt
    ssoConfig {
      allowClockSkew
      idpCertificate
      idpMetadata
      idpCallbackType
      issuerUrl
      ssoConfigMethod
      ssoEntryPoint
    }
  }
`);

export const TenantsQuery = graphql(`
  query Tenants {
    tenants {
      ...TenantFields
    }
  }
`);

export const CreateTenantMutation = graphql(`
  mutation CreateTenant($input: TenantInput!) {
    createTenant(input: $input) {
      ...TenantFields
    }
  }
`);

export const UpdateTenantMutation = graphql(`
  mutation UpdateTenant($id: ID!, $input: TenantInput!) {
    updateTenant(id: $id, input: $input) {
      ...TenantFields
    }
  }
`);

export const DeleteTenantMutation = graphql(`
  mutation DeleteTenant($id: ID!) {
    deleteTenant(id: $id)
  }
`);

export const TenantGroupFields = graphql(`
  fragment TenantGroupFields on TenantGroup {
    id
    name
    logo
    orgId
    tenantIds
    tenants {
      id
      name
    }
    createdAt
    updatedAt
  }
`);

export const TenantGroupsQuery = graphql(`
  query TenantGroups {
    tenantGroups {
      ...TenantGroupFields
    }
  }
`);

export const CreateTenantGroupMutation = graphql(`
  mutation CreateTenantGroup($input: TenantGroupInput!) {
    createTenantGroup(input: $input) {
      ...TenantGroupFields
    }
  }
`);

export const UpdateTenantGroupMutation = graphql(`
  mutation UpdateTenantGroup($id: ID!, $input: TenantGroupInput!) {
    updateTenantGroup(id: $id, input: $input) {
      ...TenantGroupFields
    }
  }
`);

export const DeleteTenantGroupMutation = graphql(`
  mutation DeleteTenantGroup($id: ID!) {
    deleteTenantGroup(id: $id)
  }
`);

export const ViewsQuery = graphql(`
  query Views($table: ViewTable!) {
    views(table: $table) {
      id
      name
      columns
      filter
      search
      orderBy {
        field
        direction
      }
      isDefault
    }
  }
`);

export const SaveViewMutation = graphql(`
  mutation SaveView($input: SaveViewInput!) {
    saveView(input: $input) {
      id
      name
      isDefault
    }
  }
`);

export const DeleteViewMutation = graphql(`
  mutation DeleteView($id: ID!) {
    deleteView(id: $id)
  }
`);

export const FeedStatusOfFeedSubscription = graphql(`
  subscription FeedStatusOfFeed($feedId: ID) {
    feedStatusChanged(feedId: $feedId) {
      ...FeedRow
    }
  }
`);

export const FeedRunProgressSubscription = graphql(`
  subscription FeedRunProgress($feedId: ID) {
    feedRunProgress(feedId: $feedId) {
      feedId
      runId
      fetched
      stored
      rejected
      done
      errorKind
      downloaded
      downloadTotal
    }
  }
`);

export const LookupIocsQuery = graphql(`
  query LookupIocs($values: [String!]!) {
    lookupIocs(values: $values) {
      input
      type
      value
      known
      error
      allowlisted {
        list
        entry
        comment
      }
      warnings {
        list
        entry
        action
      }
      ioc {
        id
        score
        tags
        expirationDate
        sources {
          source
          feed {
            id
            name
          }
        }
      }
    }
  }
`);

export const OverviewQuery = graphql(`
  query Overview {
    overview {
      computedAt
      iocCount
      byType {
        type
        count
      }
      byFeed {
        feed {
          id
          name
          type
        }
        count
      }
      days {
        day
        added
        expired
      }
      topTags {
        tag
        count
      }
      expiring {
        day
        count
      }
    }
  }
`);

export const AllowlistEntriesQuery = graphql(`
  query AllowlistEntries {
    allowlistEntries {
      id
      kind
      value
      comment
      createdAt
    }
  }
`);

export const OverviewFeedsQuery = graphql(`
  query OverviewFeeds {
    overview {
      feeds {
        feed {
          id
          name
          status
          statusMessage
          enabled
          lastRun {
            id
            errorKind
            errorDetail
          }
        }
        running
        nextRun
      }
    }
  }
`);

export const AddAllowlistEntryMutation = graphql(`
  mutation AddAllowlistEntry($input: AllowlistEntryInput!) {
    addAllowlistEntry(input: $input) {
      entry {
        id
        value
      }
      removedIocs
    }
  }
`);

export const DeleteAllowlistEntryMutation = graphql(`
  mutation DeleteAllowlistEntry($id: ID!) {
    deleteAllowlistEntry(id: $id)
  }
`);

export const UsersQuery = graphql(`
  query Users {
    users {
      id
      username
      scope
      tenantId
      enabled
      lastSignInAt
      mfaEnabled
      signInMethod
      createdAt
    }
  }
`);

export const CreateUserMutation = graphql(`
  mutation CreateUser($input: CreateUserInput!) {
    createUser(input: $input) {
      id
      username
    }
  }
`);

export const SetUserEnabledMutation = graphql(`
  mutation SetUserEnabled($id: ID!, $enabled: Boolean!) {
    setUserEnabled(id: $id, enabled: $enabled) {
      id
      enabled
    }
  }
`);

export const DeleteUserMutation = graphql(`
  mutation DeleteUser($id: ID!) {
    deleteUser(id: $id)
  }
`);

export const ResetUserPasswordMutation = graphql(`
  mutation ResetUserPassword($id: ID!) {
    resetUserPassword(id: $id) {
      password
    }
  }
`);

export const ChangePasswordMutation = graphql(`
  mutation ChangePassword($currentPassword: String!, $newPassword: String!) {
    changePassword(currentPassword: $currentPassword, newPassword: $newPassword)
  }
`);

export const UserApiKeysQuery = graphql(`
  query UserApiKeys($userId: ID!) {
    userApiKeys(userId: $userId) {
      id
      name
      prefix
      createdAt
      lastUsedAt
      revokedAt
    }
  }
`);

export const ApiKeysQuery = graphql(`
  query ApiKeys {
    apiKeys {
      id
      name
      prefix
      createdAt
      lastUsedAt
      revokedAt
    }
  }
`);

export const CreateApiKeyMutation = graphql(`
  mutation CreateApiKey($name: String!, $userId: ID) {
    createApiKey(name: $name, userId: $userId) {
      key
      apiKey {
        id
      }
    }
  }
`);

export const RevokeApiKeyMutation = graphql(`
  mutation RevokeApiKey($id: ID!) {
    revokeApiKey(id: $id)
  }
`);

export const AuditEventsQuery = graphql(`
  query AuditEvents($filter: AuditFilter, $first: Int, $after: String) {
    auditEvents(filter: $filter, first: $first, after: $after) {
      nodes {
        id
        at
        actor
        client
        action
        targetType
        targetId
        targetName
        fields
      }
      pageInfo {
        endCursor
        hasNextPage
      }
    }
  }
`);

export const MfaStatusQuery = graphql(`
  query MfaStatus {
    me {
      id
      mfaEnabled
      mfaRequired
      mfaRecoveryCodesLeft
    }
  }
`);

export const BeginMfaEnrolmentMutation = graphql(`
  mutation BeginMfaEnrolment {
    beginMfaEnrolment {
      secret
      otpauthUrl
      qrCode
    }
  }
`);

export const ConfirmMfaEnrolmentMutation = graphql(`
  mutation ConfirmMfaEnrolment($code: String!) {
    confirmMfaEnrolment(code: $code) {
      codes
    }
  }
`);

export const RegenerateMfaRecoveryCodesMutation = graphql(`
  mutation RegenerateMfaRecoveryCodes($code: String!) {
    regenerateMfaRecoveryCodes(code: $code) {
      codes
    }
  }
`);

export const DisableMfaMutation = graphql(`
  mutation DisableMfa($code: String, $password: String) {
    disableMfa(code: $code, password: $password) {
      id
      mfaEnabled
    }
  }
`);

export const ResetUserMfaMutation = graphql(`
  mutation ResetUserMfa($id: ID!) {
    resetUserMfa(id: $id) {
      id
      mfaEnabled
    }
  }
`);

export const NotificationChannelsQuery = graphql(`
  query NotificationChannels {
    notificationChannels {
      id
      name
      kind
      tenantId
      target
      events
      createdAt
    }
  }
`);

export const CreateWebhookMutation = graphql(`
  mutation CreateWebhook($input: WebhookInput!) {
    createWebhook(input: $input) {
      channel {
        id
        name
      }
      secret
    }
  }
`);

export const CreateEmailChannelMutation = graphql(`
  mutation CreateEmailChannel($input: EmailChannelInput!) {
    createEmailChannel(input: $input) {
      channel {
        id
        name
      }
    }
  }
`);

export const TestNotificationChannelMutation = graphql(`
  mutation TestNotificationChannel($id: ID!) {
    testNotificationChannel(id: $id)
  }
`);

export const DeleteNotificationChannelMutation = graphql(`
  mutation DeleteNotificationChannel($id: ID!) {
    deleteNotificationChannel(id: $id)
  }
`);

export const ChannelDeliveriesQuery = graphql(`
  query ChannelDeliveries($id: ID!, $first: Int, $after: String) {
    channelDeliveries(id: $id, first: $first, after: $after) {
      nodes {
        id
        deliveryId
        event
        at
        attempt
        status
        httpStatus
        latencyMs
        error
      }
      pageInfo {
        endCursor
        hasNextPage
      }
    }
  }
`);

export const TenantAssetsQuery = graphql(`
  query TenantAssets($tenantId: ID!, $first: Int, $after: String) {
    tenantAssets(tenantId: $tenantId, first: $first, after: $after) {
      nodes {
        id
        kind
        value
        createdAt
      }
      totalCount
      pageInfo {
        endCursor
        hasNextPage
      }
    }
  }
`);

export const AddTenantAssetsMutation = graphql(`
  mutation AddTenantAssets($tenantId: ID!, $values: [String!]!) {
    addTenantAssets(tenantId: $tenantId, values: $values) {
      added
    }
  }
`);

export const ImportTenantAssetsCsvMutation = graphql(`
  mutation ImportTenantAssetsCsv($tenantId: ID!, $csv: String!) {
    importTenantAssetsCsv(tenantId: $tenantId, csv: $csv) {
      added
    }
  }
`);

export const DeleteTenantAssetsMutation = graphql(`
  mutation DeleteTenantAssets($tenantId: ID!, $values: [String!]!) {
    deleteTenantAssets(tenantId: $tenantId, values: $values)
  }
`);

export const AssetHitsQuery = graphql(`
  query AssetHits($tenantId: ID, $first: Int, $after: String) {
    assetHits(tenantId: $tenantId, first: $first, after: $after) {
      nodes {
        id
        tenantId
        asset
        iocType
        iocValue
        score
        tags
        feedName
        at
        expiresAt
      }
      pageInfo {
        endCursor
        hasNextPage
      }
    }
  }
`);

export const WarninglistsQuery = graphql(`
  query Warninglists {
    warninglists {
      name
      description
      version
      type
      entryCount
      action
      defaultAction
      builtin
      kinds
      note
      url
      removing
    }
  }
`);

export const SetWarninglistActionMutation = graphql(`
  mutation SetWarninglistAction($name: String!, $action: WarninglistAction!) {
    setWarninglistAction(name: $name, action: $action) {
      list {
        name
        action
        removing
      }
    }
  }
`);

export const ImportWarninglistMutation = graphql(`
  mutation ImportWarninglist($input: WarninglistImportInput!) {
    importWarninglist(input: $input) {
      list {
        name
        entryCount
        removing
      }
    }
  }
`);

export const SubscribeWarninglistMutation = graphql(`
  mutation SubscribeWarninglist($input: WarninglistSubscribeInput!) {
    subscribeWarninglist(input: $input) {
      list {
        name
        entryCount
        removing
      }
    }
  }
`);

export const DeleteWarninglistMutation = graphql(`
  mutation DeleteWarninglist($name: String!) {
    deleteWarninglist(name: $name)
  }
`);
